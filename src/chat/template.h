// Chat templates: a Jinja renderer for the `tokenizer.chat_template` of GGUF / Hugging Face models.
//
// The language and its quirks follow @huggingface/jinja 0.5.13 (the engine transformers.js applies chat
// templates with), and the renderer is proven byte for byte against that engine's output for 27 real
// templates (tests: chat_template_test, data: testdata/chat-templates). As that engine does, parsing
// applies trim_blocks and lstrip_blocks, drops one trailing newline, and ignores HF's
// {% generation %} tags. See docs/chat-templates.md for what is and is not supported.
//
// Errors are values: a syntax error is InvalidArgument "line L, column C: ..."; a failure while
// rendering is InvalidArgument whose message is exactly the engine's (for raise_exception("msg") it
// is exactly "msg"); exceeding a RenderLimits bound is ResourceExhausted. Nothing is printed.
//
// Ownership and threads: a Template owns its syntax tree and is immutable after Parse; Render is const
// and may be called from many threads at once (each render has its own state). The free functions
// keep no state.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "edgedecode/status.h"

namespace edgedecode::chat {

// Bounds that turn hostile templates into errors instead of hangs or crashes.
struct RenderLimits {
  size_t max_output_bytes = 16u << 20;  // rendered text, and any one string value
  size_t max_items = 1u << 20;          // longest list (range(), concatenation, split)
  int max_depth = 400;                  // nested evaluation; macro recursion gets a quarter of it
  uint64_t max_steps = 5'000'000;       // evaluated nodes in one render (real templates: ~10^4)
};

class Template {
 public:
  // Parses (once) a template. InvalidArgument with line and column on a syntax error.
  static Result<Template> Parse(std::string_view text);

  // Renders with `context` (a JSON object; keys in its order) as the global variables.
  // `now` is the local time strftime_now() formats; nullopt = the current local time.
  Result<std::string> Render(const nlohmann::ordered_json& context, const std::optional<std::tm>& now = std::nullopt,
                             const RenderLimits& limits = {}) const;

  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;
  ~Template();

 private:
  struct Program;
  explicit Template(std::unique_ptr<Program> program);
  std::unique_ptr<Program> program_;
};

struct ChatRenderOptions {
  bool add_generation_prompt = true;
  // Special tokens as strings; nullopt = not passed (undefined in the template).
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  // OpenAI-style tool definitions (a JSON array); null = not passed (undefined in the template).
  nlohmann::ordered_json tools = nullptr;
  // More variables (e.g. {"enable_thinking": false}); merged last, so they override the above.
  nlohmann::ordered_json extra_context = nlohmann::ordered_json::object();
  std::optional<std::tm> now;  // strftime_now's clock; nullopt = current local time
  RenderLimits limits;
};

// Renders a conversation the way transformers' apply_chat_template does (and as the oracle was run):
// context = messages, add_generation_prompt, bos_token, eos_token (when given), tools (when not null),
// then extra_context. `messages` is a JSON array of {"role": ..., "content": ...} objects.
Result<std::string> RenderChat(std::string_view template_text, const nlohmann::ordered_json& messages,
                               const ChatRenderOptions& options);

// The same with a parsed template (parse once, render every turn).
Result<std::string> RenderChat(const Template& tmpl, const nlohmann::ordered_json& messages,
                               const ChatRenderOptions& options);

// A short name for the template's prompt format, from recognizable markers: "chatml", "llama3",
// "gemma", "phi3", "phi4", "mistral", "deepseek", "granite", "gpt-oss", "exaone", "zephyr", "llama2",
// or "unknown".
std::string ChatTemplateFamily(std::string_view template_text);

}  // namespace edgedecode::chat
