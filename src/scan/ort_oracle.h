// ONNX Runtime as the numerical oracle of `edgedecode rewrite`: runs tools/oracle/ort_compare.mjs (npm
// onnxruntime-node, CPU) under the pinned Node in a child process and parses its one-line JSON answer.
//
// Ownership: an OrtOracle holds paths only; each call spawns and waits for its own process, so one object
// may be used from one thread at a time (calls are independent; nothing is cached).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "edgedecode/status.h"

namespace edgedecode::scan {

// One model input to generate: ONNX type name ("float32", "int64", ...) and fixed dims.
struct OracleInput {
  std::string name;
  std::string type;
  std::vector<int64_t> dims;
};

struct OracleOutputDiff {
  std::string name;
  double max_abs_diff = -1;  // -1: not comparable (see error)
  double max_abs = 0;        // largest |value| of the first model's output (scale of the diff)
  std::string error;         // "", or why the outputs cannot be compared (shape, missing, NaN)
  bool local = false;        // a tensor inside the model the caller exposed (not a model output)
};

// Result of one comparison. A model that ONNX Runtime cannot load or run is a result too (ran=false,
// failed_model "a" or "b"), not an error: for a rewritten model it means the rewrite is wrong.
struct OracleComparison {
  bool ran = false;
  std::string failed_model;   // "a" / "b" when !ran
  std::string error;          // ORT's message when !ran
  double max_abs_diff = -1;   // over all outputs; -1 when some output is not comparable
  std::vector<OracleOutputDiff> outputs;
  double seconds = 0;
  bool Agrees(double tolerance) const { return ran && max_abs_diff >= 0 && max_abs_diff <= tolerance; }
  // "max abs diff 3.1e-06 (offsets 3.1e-06, scores 1.2e-08)" or the failure; over the model outputs, or
  // over the local tensors only.
  std::string Summary(bool local = false) const;
  double MaxDiff(bool local) const;  // -1 when one of those is not comparable; 0 when there are none
};

struct OracleOptions {
  uint32_t seed = 1;
  double lo = -1, hi = 1;       // range of random float inputs
  std::string b_opt_level;      // graph optimization level for the second model ("" = all, like the first)
};

class OrtOracle {
 public:
  // Finds node and ort_compare.mjs: $EDGEDECODE_ORACLE_DIR, else tools/oracle of the source tree. kNotFound
  // says what is missing and how to install it (make setup).
  static Result<OrtOracle> Find();
  OrtOracle(std::string node, std::string script, std::string work_dir)
      : node_(std::move(node)), script_(std::move(script)), work_dir_(std::move(work_dir)) {}

  // Runs both models on the same seeded random inputs. Errors (kInternal) only when the oracle itself
  // misbehaves (cannot start, crashes, prints no JSON).
  Result<OracleComparison> Compare(const std::string& a, const std::string& b, const std::vector<OracleInput>& inputs,
                                   const OracleOptions& opts = {}) const;
  // Runs one model; returns ort_compare's JSON ({"ok", "outputs": [{"name","type","dims","data"?}]}).
  // ok=false (the model fails in ORT) is returned as kCorrupt with ORT's message.
  Result<nlohmann::json> Eval(const std::string& model, const std::vector<OracleInput>& inputs, int64_t max_data,
                              const OracleOptions& opts = {}) const;

  // Where temporary stdout/stderr captures go (a directory the caller owns).
  void set_work_dir(std::string dir) { work_dir_ = std::move(dir); }
  const std::string& node() const { return node_; }
  const std::string& script() const { return script_; }

 private:
  Result<nlohmann::json> Run(std::vector<std::string> args) const;
  std::string node_, script_, work_dir_;
};

}  // namespace edgedecode::scan
