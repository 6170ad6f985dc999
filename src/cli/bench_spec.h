// `bench --spec`: a drafter's decode speed against plain decoding in the same run. Each repetition decodes the
// same prompt greedily twice, plainly and through LookupDecoder with the drafter of the speculative options
// (the arms alternate, A B A B, so that a shared machine's slow spells hit both alike; repetition 0 warms up
// and is not counted), and checks that the speculative output is the plain one token for token.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/model_options.h"
#include "cli/spec_options.h"

namespace edgedecode::cli {

struct SpecBenchParams {
  std::string model_path;  // for the JSON lines
  const LoadedWeights* weights = nullptr;
  int n_batch = 512;
  bool no_repack = false;
  std::vector<int> threads;
  std::vector<GgmlType> kv_types;
  std::string prompt;  // the text (tokenized as `run` does, BOS first)
  int n_gen = 128;
  int reps = 3;
};

// Runs the A/B at every thread count and KV type: a table on `out`, one JSON object per A/B to `json_line`
// (when set). Internal (exit 1) naming the repetition and the first differing token when the speculative
// output is not the plain one; the model's and drafters' own errors otherwise. Interrupted: returns Ok after
// the A/Bs that finished.
Status RunSpecBench(SpecOptions& spec, const SpecBenchParams& p, FILE* out,
                    const std::function<void(nlohmann::json)>& json_line);

}  // namespace edgedecode::cli
