// `edgedecode synth --config FILE.json`: the shape fields over a preset (tooling::ShapeFromJson, with
// ModelShape::Validate), then what synth derives from an accepted shape before writing anything: the
// tensor list, the parameter count, the llama3 RoPE factors and the logit scale.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "tooling/model_spec.h"
#include "tooling/synth.h"

using namespace edgedecode;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto shape = tooling::ShapeFromJson(std::string(fuzz::AsText(data, size)), "config.json");
  if (!shape.ok()) return 0;
  const tooling::ModelShape& s = shape.value();
  int64_t elements = 0;
  for (const tooling::TensorSpec& t : tooling::ModelTensors(s)) elements += t.n_elements();
  (void)elements;
  (void)s.n_params();
  if (s.llama3_rope()) (void)tooling::RopeFreqFactors(s);
  (void)tooling::DefaultLogitScale(s.vocab);
  return 0;
}
