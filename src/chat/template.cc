// The public entry points: parse, render, the chat context, and the template family.
#include "chat/template.h"

#include <chrono>
#include <new>
#include <vector>

#include "chat/interpreter.h"
#include "chat/lexer.h"
#include "chat/parser.h"

namespace edgedecode::chat {

struct Template::Program {
  std::vector<NodePtr> statements;
};

Template::Template(std::unique_ptr<Program> program) : program_(std::move(program)) {}
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;
Template::~Template() = default;

Result<Template> Template::Parse(std::string_view text) {
  if (text.size() > (64u << 20)) return ResourceExhausted("chat template larger than 64 MiB");
  try {
    auto program = std::make_unique<Program>();
    program->statements = chat::Parse(Tokenize(text));
    return Template(std::move(program));
  } catch (const TemplateError& e) {
    return InvalidArgument("chat template: " + e.message);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("chat template: out of memory while parsing");
  }
}

namespace {
std::tm LocalNow() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&t, &local);
  return local;
}

bool IsLimitError(const std::string& message) {
  return message.find("limit") != std::string::npos || message.find("too deeply") != std::string::npos;
}
}  // namespace

Result<std::string> Template::Render(const nlohmann::ordered_json& context, const std::optional<std::tm>& now,
                                     const RenderLimits& limits) const {
  if (!context.is_object()) return InvalidArgument("chat template context must be a JSON object");
  try {
    Interpreter interpreter(limits, now ? *now : LocalNow());
    return interpreter.Render(program_->statements, Value::FromJson(context));
  } catch (const TemplateError& e) {
    // The message is the template's own (raise_exception) or the engine's, unchanged: callers and
    // tests compare it with what the reference engine says.
    return Status(IsLimitError(e.message) ? StatusCode::kResourceExhausted : StatusCode::kInvalidArgument, e.message);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("out of memory while rendering the chat template");
  }
}

Result<std::string> RenderChat(const Template& tmpl, const nlohmann::ordered_json& messages,
                               const ChatRenderOptions& options) {
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = messages;
  context["add_generation_prompt"] = options.add_generation_prompt;
  if (!options.tools.is_null()) context["tools"] = options.tools;
  if (options.extra_context.is_object()) {
    for (const auto& [k, v] : options.extra_context.items()) context[k] = v;
  }
  if (options.bos_token) context["bos_token"] = *options.bos_token;
  if (options.eos_token) context["eos_token"] = *options.eos_token;
  return tmpl.Render(context, options.now, options.limits);
}

Result<std::string> RenderChat(std::string_view template_text, const nlohmann::ordered_json& messages,
                               const ChatRenderOptions& options) {
  ED_ASSIGN_OR_RETURN(const Template tmpl, Template::Parse(template_text));
  return RenderChat(tmpl, messages, options);
}

std::string ChatTemplateFamily(std::string_view t) {
  auto has = [t](std::string_view marker) { return t.find(marker) != std::string_view::npos; };
  // Most specific markers first: several families reuse ChatML's <|im_start|>.
  if (has("<|channel|>") && has("<|start|>")) return "gpt-oss";
  if (has("<|start_header_id|>")) return "llama3";
  if (has("<start_of_turn>")) return "gemma";
  if (has("<|start_of_role|>")) return "granite";
  if (has("<\xef\xbd\x9c" "User\xef\xbd\x9c>") || has("<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>")) return "deepseek";
  if (has("[|system|]") || has("[|endofturn|]")) return "exaone";
  if (has("<|im_sep|>")) return "phi4";
  if (has("<|im_start|>")) return "chatml";
  if (has("[AVAILABLE_TOOLS]") || has("[SYSTEM_PROMPT]")) return "mistral";
  if (has("<|user|>") && has("<|end|>")) return "phi3";
  if (has("<|user|>") && has("<|assistant|>")) return "zephyr";
  if (has("[INST]")) return has("<<SYS>>") ? "llama2" : "mistral";
  return "unknown";
}

}  // namespace edgedecode::chat
