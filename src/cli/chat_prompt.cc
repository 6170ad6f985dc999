#include "cli/chat_prompt.h"

#include "cli/common.h"

namespace edgedecode::cli {

Result<ChatPrompt> ChatPrompt::Load(const llm::Model& model, const std::string& override_path) {
  std::string text, source;
  if (!override_path.empty()) {
    ED_ASSIGN_OR_RETURN(text, ReadInputText(override_path, uint64_t{1} << 20));
    source = override_path;
  } else {
    const gguf::Value* v = model.file().Find("tokenizer.chat_template");
    if (v == nullptr || v->type != gguf::ValueType::kString || v->str.empty())
      return InvalidArgument(model.file().path() + " has no chat template (tokenizer.chat_template): give one with --chat-template FILE");
    text = v->str;
    source = "the model's tokenizer.chat_template";
  }
  auto parsed = chat::Template::Parse(text);
  if (!parsed.ok()) return parsed.status().WithContext(source);
  return ChatPrompt(model, std::move(text), std::move(source), std::move(*parsed));
}

Result<std::string> ChatPrompt::Text(const nlohmann::ordered_json& messages, bool add_generation_prompt) const {
  const tok::Tokenizer& tk = model_->tokenizer();
  chat::ChatRenderOptions o;
  o.add_generation_prompt = add_generation_prompt;
  if (tk.bos() >= 0) o.bos_token = tk.TokenText(tk.bos());
  if (tk.eos() >= 0) o.eos_token = tk.TokenText(tk.eos());
  auto r = chat::RenderChat(tmpl_, messages, o);
  if (!r.ok()) return r.status().WithContext("chat template (" + source_ + ")");
  return r;
}

Result<std::vector<int32_t>> ChatPrompt::Tokens(const nlohmann::ordered_json& messages, bool add_generation_prompt) const {
  ED_ASSIGN_OR_RETURN(std::string text, Text(messages, add_generation_prompt));
  const tok::Tokenizer& tk = model_->tokenizer();
  // Templates that write the BOS text themselves (Llama 3, Gemma) must not get a second one.
  const bool template_has_bos = tk.bos() >= 0 && text.rfind(tk.TokenText(tk.bos()), 0) == 0;
  return tk.Encode(text, tk.add_bos_default() && !template_has_bos, /*parse_special=*/true);
}

}  // namespace edgedecode::cli
