// The model's chat template (or --chat-template FILE) applied to a conversation, and the rendered text
// tokenized the way llama.cpp does it for chat (special tokens parsed; BOS added only when the template
// did not write it). Shared by `run --chat` and `chat`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chat/template.h"
#include "llm/model.h"

namespace edgedecode::cli {

class ChatPrompt {
 public:
  // The template: override_path when given, else the model's tokenizer.chat_template; InvalidArgument
  // naming --chat-template when the model has none.
  static Result<ChatPrompt> Load(const llm::Model& model, const std::string& override_path);

  // Renders messages (a JSON array of {role, content}) with add_generation_prompt and tokenizes.
  Result<std::vector<int32_t>> Tokens(const nlohmann::ordered_json& messages, bool add_generation_prompt = true) const;
  Result<std::string> Text(const nlohmann::ordered_json& messages, bool add_generation_prompt = true) const;
  const std::string& source() const { return source_; }  // "the model" or the file
  std::string family() const { return chat::ChatTemplateFamily(text_); }

 private:
  ChatPrompt(const llm::Model& m, std::string text, std::string source, chat::Template t)
      : model_(&m), text_(std::move(text)), source_(std::move(source)), tmpl_(std::move(t)) {}
  const llm::Model* model_;
  std::string text_, source_;
  chat::Template tmpl_;
};

}  // namespace edgedecode::cli
