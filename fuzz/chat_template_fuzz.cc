// Chat templates (`tokenizer.chat_template` of a GGUF, or a template file): chat::Template::Parse, then
// Render with a fixed conversation (system, user, assistant with a tool call, tool reply), tools, special
// tokens and a fixed clock, under RenderLimits tighter than the defaults so that one input stays fast;
// and the family sniffing `info` and `chat` use.
#include <cstdint>
#include <ctime>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/template.h"
#include "fuzz/fuzz_util.h"

using namespace edgedecode;
using ojson = nlohmann::ordered_json;

namespace {

ojson Context() {
  ojson messages = ojson::parse(R"([
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is 2+2? <think>x</think>"},
    {"role": "assistant", "content": "",
     "tool_calls": [{"type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 2}}}]},
    {"role": "tool", "name": "add", "content": "4"},
    {"role": "assistant", "content": "4"},
    {"role": "user", "content": [{"type": "text", "text": "And 3+3?"}]}
  ])");
  ojson tools = ojson::parse(R"([{"type": "function", "function": {"name": "add", "description": "a+b",
    "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                   "required": ["a", "b"]}}}])");
  return ojson{{"messages", messages}, {"add_generation_prompt", true}, {"bos_token", "<s>"},
               {"eos_token", "</s>"}, {"tools", tools}, {"enable_thinking", false}};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ojson context = Context();
  const std::string_view text = fuzz::AsText(data, size);
  (void)chat::ChatTemplateFamily(text);
  auto t = chat::Template::Parse(text);
  if (!t.ok()) return 0;
  std::tm now{};
  now.tm_year = 124, now.tm_mon = 6, now.tm_mday = 26, now.tm_hour = 12;
  chat::RenderLimits limits;
  limits.max_output_bytes = 1u << 20;
  limits.max_items = 1u << 16;
  limits.max_steps = 200'000;
  (void)t.value().Render(context, now, limits);
  return 0;
}
