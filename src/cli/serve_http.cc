#include "cli/serve_http.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cmath>

#include "cli/common.h"
#include "cli/serve_request.h"

namespace edgedecode::cli::serve {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

void SendError(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(DumpJson(ojson{{"error", ErrorObject(e)}}) + "\n", "application/json");
}

void SendJson(httplib::Response& res, const ojson& j) { res.set_content(DumpJson(j) + "\n", "application/json"); }

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

ApiError StatusToError(const Status& st) {
  switch (st.code()) {
    case StatusCode::kResourceExhausted: return ApiError{429, st.message(), "", "rate_limit_exceeded", "rate_limit_error"};
    case StatusCode::kUnavailable: return ApiError{503, st.message(), "", "unavailable", "server_error"};
    case StatusCode::kInvalidArgument: return ApiError{400, st.message(), "", "invalid_value"};
    default: return ApiError{500, st.message(), "", "internal_error", "server_error"};
  }
}

// What one response (whole or streamed) names and counts.
struct Shape {
  bool chat;
  std::string id, model;
  int64_t created;
  int prompt_tokens;
};

ojson Usage(const Shape& s, int completion_tokens) {
  return {{"prompt_tokens", s.prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", s.prompt_tokens + completion_tokens}};
}

ojson Envelope(const Shape& s, bool chunk) {
  const char* object = s.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", s.id}, {"object", object}, {"created", s.created}, {"model", s.model}, {"system_fingerprint", "edgedecode"}};
}

ojson Bytes(const std::string& s) {
  ojson b = ojson::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// Log-probabilities in the route's shape: chat's {"content": [{token, logprob, bytes, top_logprobs}]}, or
// the legacy completions' parallel arrays {tokens, token_logprobs, top_logprobs, text_offset}, whose
// offsets (bytes into the completion text) continue from *offset.
ojson LogprobsJson(bool chat, const std::vector<TokenLogprob>& lps, size_t* offset) {
  if (chat) {
    ojson content = ojson::array();
    for (const TokenLogprob& t : lps) {
      ojson top = ojson::array();
      for (const TopLogprob& a : t.top) top.push_back({{"token", a.token}, {"logprob", a.logprob}, {"bytes", Bytes(a.token)}});
      content.push_back({{"token", t.token}, {"logprob", t.logprob}, {"bytes", Bytes(t.token)}, {"top_logprobs", top}});
    }
    return {{"content", content}, {"refusal", nullptr}};
  }
  ojson tokens = ojson::array(), values = ojson::array(), tops = ojson::array(), offsets = ojson::array();
  for (const TokenLogprob& t : lps) {
    tokens.push_back(t.token);
    values.push_back(t.logprob);
    ojson top = ojson::object();
    for (const TopLogprob& a : t.top)
      if (!top.contains(a.token)) top[a.token] = a.logprob;  // two ids with the same text: the likelier one
    tops.push_back(top);
    offsets.push_back(*offset);
    *offset += t.token.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

// What a choice carries under "logprobs": null when they were not asked for.
ojson ChoiceLogprobs(const Shape& s, const std::vector<TokenLogprob>* lps, size_t* offset) {
  return lps == nullptr ? ojson(nullptr) : LogprobsJson(s.chat, *lps, offset);
}

ojson WholeResponse(const Shape& s, const std::string& text, const std::string& finish, int completion_tokens,
                    const std::vector<TokenLogprob>* lps) {
  ojson j = Envelope(s, false);
  ojson choice = {{"index", 0}};
  if (s.chat)
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  else
    choice["text"] = text;
  size_t offset = 0;
  choice["logprobs"] = ChoiceLogprobs(s, lps, &offset);
  choice["finish_reason"] = finish;
  j["choices"] = ojson::array({choice});
  j["usage"] = Usage(s, completion_tokens);
  return j;
}

// One streamed chunk: text (or, with finish set, the last chunk and its finish_reason), and the
// log-probabilities of the tokens generated since the previous chunk (lps null: not asked for).
std::string ChunkEvent(const Shape& s, const std::string& text, const std::string& finish, bool role,
                       const std::vector<TokenLogprob>* lps = nullptr, size_t* offset = nullptr) {
  ojson j = Envelope(s, true);
  ojson choice = {{"index", 0}};
  if (s.chat) {
    choice["delta"] = ojson::object();
    if (role) choice["delta"]["role"] = "assistant";
    if (finish.empty()) choice["delta"]["content"] = text;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = ChoiceLogprobs(s, lps, offset);
  choice["finish_reason"] = finish.empty() ? ojson(nullptr) : ojson(finish);
  j["choices"] = ojson::array({choice});
  return "data: " + DumpJson(j) + "\n\n";
}

std::string UsageEvent(const Shape& s, int completion_tokens) {
  ojson j = Envelope(s, true);
  j["choices"] = ojson::array();
  j["usage"] = Usage(s, completion_tokens);
  return "data: " + DumpJson(j) + "\n\n";
}

// A streamed response: the job, what the chunks name, and how far it got.
struct Stream {
  std::shared_ptr<Job> job;
  Shape shape;
  bool include_usage = false, started = false;
  bool logprobs = false;
  std::vector<TokenLogprob> pending;  // log-probabilities not yet sent (their tokens' text was held back)
  size_t text_offset = 0;
};

bool Write(httplib::DataSink& sink, const std::string& s) { return sink.write(s.data(), s.size()); }

// The chunked content provider's body: called until it calls sink.done() or returns false. A failed write
// means the client is gone: the job is cancelled, which frees its slot at the scheduler's next step.
bool StreamStep(Stream& st, httplib::DataSink& sink) {
  Job& job = *st.job;
  if (!st.started) {
    st.started = true;
    if (st.shape.chat && !Write(sink, ChunkEvent(st.shape, "", "", true))) return job.cancelled = true, false;
  }
  std::vector<std::string> pieces;
  const bool done = job.WaitPieces(&pieces, 100, &st.pending);
  // A token's log-probability rides on its own chunk when every token gave one piece; otherwise (text
  // held back by a stop string or a split UTF-8 character) on the last chunk of this round, or the finish one.
  auto take = [&st]() -> const std::vector<TokenLogprob>* { return st.logprobs ? &st.pending : nullptr; };
  std::string events;
  if (st.logprobs && pieces.size() == st.pending.size()) {
    std::vector<TokenLogprob> one(1);
    for (size_t i = 0; i < pieces.size(); ++i) {
      one[0] = std::move(st.pending[i]);
      events += ChunkEvent(st.shape, pieces[i], "", false, &one, &st.text_offset);
    }
    st.pending.clear();
  } else {
    for (size_t i = 0; i < pieces.size(); ++i) {
      const bool last = i + 1 == pieces.size();
      events += ChunkEvent(st.shape, pieces[i], "", false, last ? take() : nullptr, &st.text_offset);
      if (last) st.pending.clear();
    }
  }
  if (!events.empty() && !Write(sink, events)) return job.cancelled = true, false;
  if (!done) return true;
  std::string tail;
  if (!job.error.ok()) {
    ApiError e = StatusToError(job.error);
    tail = "data: " + DumpJson(ojson{{"error", {{"message", e.message}, {"type", e.type}, {"param", nullptr}, {"code", e.code}}}}) + "\n\n";
  } else {
    tail = ChunkEvent(st.shape, "", job.finish_reason, false, st.pending.empty() ? nullptr : take(), &st.text_offset);
    if (st.include_usage) tail += UsageEvent(st.shape, job.completion_tokens);
  }
  tail += "data: [DONE]\n\n";
  if (!Write(sink, tail)) return false;
  sink.done();
  return true;
}

bool KeyMatches(const std::string& header, const std::string& key) {
  const std::string want = "Bearer " + key;
  if (header.size() != want.size()) return false;
  unsigned diff = 0;  // constant time over the length: no early exit on the first differing byte
  for (size_t i = 0; i < want.size(); ++i) diff |= static_cast<unsigned char>(header[i] ^ want[i]);
  return diff == 0;
}

// A request whose method carries a body (for httplib), without a Content-Length or with a Transfer-Encoding.
bool BodyOfUnknownLength(const httplib::Request& req) {
  const bool has_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" || req.method == "DELETE" ||
                        req.method == "PRI";
  return has_body && (req.has_header("Transfer-Encoding") || !req.has_header("Content-Length"));
}

const char* KnownPath(const std::string& p) {
  for (const char* k : {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics", "/tokenize",
                        "/detokenize"})
    if (p == k) return k;
  return "other";
}

}  // namespace

void Api::SetReady(const llm::Model& model, std::optional<ChatPrompt> chat, std::string chat_error, Scheduler& sched) {
  model_ = &model;
  chat_ = std::move(chat);
  chat_error_ = std::move(chat_error);
  sched_ = &sched;
  ready_ = true;
}

void Api::CountRequest(const std::string& path, int status) {
  std::lock_guard<std::mutex> lk(count_mu_);
  ++requests_[std::string(KnownPath(path)) + "\t" + std::to_string(status)];
}

void Api::Register(httplib::Server& svr, int handler_threads) {
  // Every streaming request holds a handler thread until its last token.
  svr.new_task_queue = [handler_threads] { return new httplib::ThreadPool(static_cast<size_t>(handler_threads)); };
  svr.set_payload_max_length(o_.max_body_bytes);
  svr.set_read_timeout(30, 0);
  svr.set_write_timeout(30, 0);
  svr.set_keep_alive_timeout(5);
  svr.set_keep_alive_max_count(100);
  svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // httplib bounds only a body that has a Content-Length (--max-body, 413): a chunked one, or one read
    // until the client closes, would be read whole whatever its size. Refused before a byte of it is read,
    // asking the client to close the connection (httplib would take the unread body for the next request).
    if (BodyOfUnknownLength(req)) {
      res.set_header("Connection", "close");
      SendError(res, {411, "send the request body with a Content-Length header (chunked or unsized bodies are not accepted)",
                      "", "length_required"});
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
    if (!o_.api_key.empty() && !KeyMatches(req.get_header_value("Authorization"), o_.api_key)) {
      SendError(res, {401, "missing or wrong API key: send the header 'Authorization: Bearer KEY'", "", "invalid_api_key"});
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!ready_ && req.path != "/metrics") {
      SendError(res, {503, "the model is loading; retry when /health answers 200", "", "model_loading", "server_error"});
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Error statuses without a body (httplib's own: 404 no route, 413 body too large, 400 bad request line).
  svr.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404)
      SendError(res, {404, "no route " + req.method + " " + req.path, "", "not_found"});
    else if (res.status == 413)
      SendError(res, {413, "the request body is larger than " + std::to_string(o_.max_body_bytes) + " bytes", "", "request_too_large"});
    else
      SendError(res, {res.status, "HTTP status " + std::to_string(res.status), "", ""});
  });
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    SendError(res, {500, what, "", "internal_error", "server_error"});
  });
  svr.set_logger([this](const httplib::Request& req, const httplib::Response& res) { CountRequest(req.path, res.status); });

  svr.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (!ready_) return res.status = 503, SendJson(res, {{"status", "loading"}});
    if (draining_) return res.status = 503, SendJson(res, {{"status", "shutting down"}});
    SendJson(res, {{"status", "ok"}});
  });
  svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(Metrics(), "text/plain; version=0.0.4");
  });
  svr.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    SendJson(res, {{"object", "list"},
                   {"data", ojson::array({{{"id", o_.model_id}, {"object", "model"}, {"created", Now()}, {"owned_by", "edgedecode"}}})}});
  });
  svr.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) { Generate(req.body, true, res); });
  svr.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) { Generate(req.body, false, res); });
  svr.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) { Tokenize(req.body, res); });
  svr.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) { Detokenize(req.body, res); });
}

void Api::Generate(const std::string& body, bool chat, httplib::Response& res) {
  json b;
  if (auto e = ParseBody(body, &b)) return SendError(res, *e);
  GenParams p;
  if (auto e = ParseGenParams(b, &p)) return SendError(res, *e);
  if (auto e = ParseLogprobs(b, chat, &p)) return SendError(res, *e);
  if (auto e = ParseResponseFormat(b, &p)) return SendError(res, *e);
  const tok::Tokenizer& tk = model_->tokenizer();
  std::vector<int32_t> prompt;
  const char* prompt_param = chat ? "messages" : "prompt";
  if (chat) {
    if (!chat_) return SendError(res, {400, chat_error_, "messages", "no_chat_template"});
    ojson messages;
    if (auto e = ParseMessages(b, &messages)) return SendError(res, *e);
    std::lock_guard<std::mutex> lk(chat_mu_);
    auto t = chat_->Tokens(messages);
    if (!t.ok()) return SendError(res, BadParam("messages", t.status().message()));
    prompt = std::move(*t);
  } else {
    PromptInput in;
    if (auto e = ParsePrompt(b, tk.vocab_size(), &in)) return SendError(res, *e);
    prompt = in.is_ids ? std::move(in.ids) : tk.Encode(in.text, tk.add_bos_default());
  }
  if (prompt.empty()) {
    if (tk.bos() < 0) return SendError(res, BadParam(prompt_param, "is empty and the vocabulary has no BOS token"));
    prompt.push_back(tk.bos());
  }
  const int n_ctx = sched_->n_ctx();
  if (static_cast<int>(prompt.size()) >= n_ctx)
    return SendError(res, {400, std::string(prompt_param) + ": the prompt has " + std::to_string(prompt.size()) +
                                    " tokens, which does not fit in the context of " + std::to_string(n_ctx) + " (serve -c)",
                           prompt_param, "context_length_exceeded"});
  if (draining_) return SendError(res, {503, "the server is shutting down", "", "unavailable", "server_error"});

  auto job = std::make_shared<Job>();
  job->prompt = prompt;
  job->max_tokens = static_cast<int>(p.max_tokens > 0 ? p.max_tokens : n_ctx);
  job->sampling = p.sampling;
  job->stops = p.stops;
  job->ignore_eos = p.ignore_eos;
  job->top_logprobs = p.top_logprobs;
  job->grammar = p.grammar;
  // Counted before Submit: a drain that sees 0 in flight never misses an accepted job.
  ++in_flight_;
  if (Status st = sched_->Submit(job); !st.ok()) {
    --in_flight_;
    return SendError(res, StatusToError(st));
  }
  Shape shape{chat, (chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id_++), o_.model_id, Now(), static_cast<int>(prompt.size())};

  if (p.stream) {
    auto st = std::make_shared<Stream>();
    st->job = job;
    st->shape = shape;
    st->include_usage = p.include_usage;
    st->logprobs = p.top_logprobs >= 0;
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream", [st](size_t, httplib::DataSink& sink) { return StreamStep(*st, sink); },
        [this, st](bool success) {
          if (!success) st->job->cancelled = true;  // the client went away: free the slot
          --in_flight_;
        });
    return;
  }
  std::vector<std::string> pieces;
  std::vector<TokenLogprob> lps;
  while (!job->WaitPieces(&pieces, 1000, &lps)) {
  }
  --in_flight_;
  std::string text;
  for (const std::string& p : pieces) text += p;
  if (!job->error.ok()) return SendError(res, StatusToError(job->error));
  SendJson(res, WholeResponse(shape, text, job->finish_reason, job->completion_tokens, p.top_logprobs >= 0 ? &lps : nullptr));
}

void Api::Tokenize(const std::string& body, httplib::Response& res) const {
  json b;
  if (auto e = ParseBody(body, &b)) return SendError(res, *e);
  TokenizeRequest r;
  if (auto e = ParseTokenizeRequest(b, &r)) return SendError(res, *e);
  const tok::Tokenizer& tk = model_->tokenizer();
  SendJson(res, {{"tokens", tk.Encode(r.content, r.add_special && tk.add_bos_default())}});
}

void Api::Detokenize(const std::string& body, httplib::Response& res) const {
  json b;
  if (auto e = ParseBody(body, &b)) return SendError(res, *e);
  const tok::Tokenizer& tk = model_->tokenizer();
  std::vector<int32_t> ids;
  if (auto e = ParseTokenIds(b, tk.vocab_size(), &ids)) return SendError(res, *e);
  SendJson(res, {{"content", tk.Decode(ids)}});
}

std::string Api::Metrics() const {
  std::string m;
  auto metric = [&m](const std::string& name, const char* type, const char* help, const std::string& samples) {
    m += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + samples;
  };
  {
    std::lock_guard<std::mutex> lk(count_mu_);
    std::string s;
    for (const auto& [key, n] : requests_) {
      const size_t tab = key.find('\t');
      s += "edgedecode_requests_total{path=\"" + key.substr(0, tab) + "\",status=\"" + key.substr(tab + 1) + "\"} " +
           std::to_string(n) + "\n";
    }
    metric("edgedecode_requests_total", "counter", "HTTP requests answered, by path and status.", s);
  }
  const SchedulerStats st = ready_ ? sched_->Stats() : SchedulerStats{};
  auto one = [](const std::string& name, double v) { return name + " " + DumpJson(v) + "\n"; };
  metric("edgedecode_prompt_tokens_total", "counter", "Prompt tokens of the generation requests (tokens in).",
         one("edgedecode_prompt_tokens_total", static_cast<double>(st.prompt_tokens)));
  metric("edgedecode_prompt_tokens_reused_total", "counter", "Prompt tokens served from a slot's KV cache (prefix reuse).",
         one("edgedecode_prompt_tokens_reused_total", static_cast<double>(st.reused_tokens)));
  metric("edgedecode_completion_tokens_total", "counter", "Tokens generated (tokens out).",
         one("edgedecode_completion_tokens_total", static_cast<double>(st.completion_tokens)));
  metric("edgedecode_draft_tokens_total", "counter", "Speculative decoding (--lookup, --draft, --draft-quant, --self-spec): tokens drafted and verified.",
         one("edgedecode_draft_tokens_total", static_cast<double>(st.draft_tokens)));
  metric("edgedecode_draft_tokens_accepted_total", "counter", "Speculative decoding: drafted tokens the model confirmed.",
         one("edgedecode_draft_tokens_accepted_total", static_cast<double>(st.draft_accepted)));
  metric("edgedecode_draft_passes_total", "counter", "Speculative decoding: slot steps that verified a draft.",
         one("edgedecode_draft_passes_total", static_cast<double>(st.draft_passes)));
  metric("edgedecode_draft_paused_steps_total", "counter",
         "Speculative decoding: slot steps that did not draft because the slot's drafting was paused (drafts that lose time or fail).",
         one("edgedecode_draft_paused_steps_total", static_cast<double>(st.draft_paused_steps)));
  metric("edgedecode_slots_draft_paused", "gauge", "Speculative decoding: busy slots whose drafting is paused now.",
         one("edgedecode_slots_draft_paused", st.slots_draft_paused));
  metric("edgedecode_queue_depth", "gauge", "Requests waiting for a slot.", one("edgedecode_queue_depth", st.queue_depth));
  metric("edgedecode_slots_busy", "gauge", "Slots generating.", one("edgedecode_slots_busy", st.slots_busy));
  metric("edgedecode_slots", "gauge", "Slots (--parallel).", one("edgedecode_slots", st.slots));
  metric("edgedecode_kv_cells_used", "gauge", "KV cache positions holding tokens, all slots.",
         one("edgedecode_kv_cells_used", static_cast<double>(st.kv_cells_used)));
  metric("edgedecode_kv_cells_total", "gauge", "KV cache positions, all slots.",
         one("edgedecode_kv_cells_total", static_cast<double>(st.kv_cells_total)));
  metric("edgedecode_model_ready", "gauge", "1 once the model is loaded.", one("edgedecode_model_ready", ready_ ? 1 : 0));
  return m;
}

}  // namespace edgedecode::cli::serve
