// The HTTP side of `edgedecode serve`: OpenAI-compatible routes on cpp-httplib. Handler threads parse and
// validate a request, tokenize it, submit a Job to the Scheduler and wait for its text (streamed as
// server-sent events or returned whole). Errors are OpenAI error objects. Prints nothing.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "cli/chat_prompt.h"
#include "cli/serve_scheduler.h"
#include "llm/model.h"

namespace httplib {
class Server;
struct Response;
}

namespace edgedecode::cli::serve {

struct ApiOptions {
  std::string model_id;          // what /v1/models lists and responses name
  std::string api_key;           // "" = no Authorization check
  size_t max_body_bytes = 1 << 20;
};

class Api {
 public:
  explicit Api(ApiOptions o) : o_(std::move(o)) {}

  // Routes, the auth and loading checks, error bodies, limits and timeouts.
  void Register(httplib::Server& svr, int handler_threads);
  // After loading: /health turns 200 and the generation routes open. chat is empty when the model has no
  // chat template (chat_error says why; /v1/chat/completions answers it as a 400).
  void SetReady(const llm::Model& model, std::optional<ChatPrompt> chat, std::string chat_error, Scheduler& sched);
  // SIGTERM: new generation requests get 503 while the accepted ones finish.
  void StopAccepting() { draining_ = true; }
  // Generation requests accepted and not yet answered in full (a stream counts until its last byte).
  int in_flight() const { return in_flight_; }

 private:
  void Generate(const std::string& body, bool chat, httplib::Response& res);
  void Tokenize(const std::string& body, httplib::Response& res) const;
  void Detokenize(const std::string& body, httplib::Response& res) const;
  std::string Metrics() const;
  void CountRequest(const std::string& path, int status);

  ApiOptions o_;
  std::atomic<bool> ready_{false}, draining_{false};
  std::atomic<int> in_flight_{0};
  std::atomic<uint64_t> next_id_{1};
  const llm::Model* model_ = nullptr;
  std::optional<ChatPrompt> chat_;
  std::string chat_error_;
  Scheduler* sched_ = nullptr;
  std::mutex chat_mu_;  // the template renderer is used from one handler at a time
  mutable std::mutex count_mu_;
  std::map<std::string, uint64_t> requests_;  // "path\tstatus" -> count
};

}  // namespace edgedecode::cli::serve
