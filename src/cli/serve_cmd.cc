// `edgedecode serve`: an OpenAI-compatible HTTP service on this machine (docs/serve.md). The socket is
// bound first, so that /health answers 503 while the model loads; then --parallel contexts share the one
// model, a scheduler thread (serve_scheduler.h) runs them, and httplib's handler threads (serve_http.h)
// talk to clients. SIGINT / SIGTERM: stop accepting, finish what was accepted, exit 0.
#include <httplib.h>

#include <csignal>
#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/draft_options.h"
#include "cli/model_options.h"
#include "cli/serve_http.h"
#include "cli/serve_scheduler.h"
#include "cli/self_spec_options.h"
#include "cli/signals.h"
#include "llm/speculative.h"

namespace edgedecode::cli {
namespace {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  int parallel = 1;
  int queue = -1;  // -1: 4 x parallel
  std::string api_key, chat_template;
  bool no_auth = false;
  size_t max_body = 1 << 20;
  serve::SpecOptions spec;
  DraftOptions draft;  // --draft / --draft-quant, as `run` takes them
  CLI::Option* draft_max_opt = nullptr;
  SelfSpecOptions self_spec;  // --self-spec / --self-spec-budget, as `run` takes them
};

bool IsLoopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

Status Validate(const ServeOptions& so) {
  if (so.port < 0 || so.port > 65535) return InvalidArgument("--port must be in [0, 65535] (0: any free port)");
  if (so.parallel < 1 || so.parallel > 256) return InvalidArgument("--parallel must be in [1, 256]");
  if (so.queue < -1) return InvalidArgument("--queue must be >= 0");
  if (so.max_body < 1024) return InvalidArgument("--max-body must be >= 1024 bytes");
  if (so.spec.lookup < 0 || so.spec.lookup > 64) return InvalidArgument("--lookup must be in [0, 64]");
  if (so.draft_max_opt->count() > 0 && !so.draft.on() && !so.self_spec.on())
    return InvalidArgument("--draft-max needs --draft, --draft-quant or --self-spec");
  if (!IsLoopback(so.host) && so.api_key.empty() && !so.no_auth)
    return InvalidArgument("--host " + so.host +
                           " listens beyond this machine: set --api-key KEY (clients send 'Authorization: Bearer KEY'), "
                           "or --no-auth to serve anyone who can reach it");
  return Status::Ok();
}

// The plan of `parallel` slots: the model's and, with a draft model, the draft's (its weights once, its KV
// cache and scratch per slot), as `plan --seqs N --draft ...` counts them.
Result<llm::MemoryPlan> PlanSlots(const LoadedWeights& w, DraftOptions& draft, llm::PlanParams pp, int parallel) {
  pp.n_seqs = parallel;
  llm::MemoryPlan plan = llm::PlanMemory(*w.model, pp);
  if (draft.on()) {
    ED_ASSIGN_OR_RETURN(const llm::MemoryPlan dp, draft.Plan(*w.model, pp));
    llm::AddDraftPlan(dp, &plan);
  }
  return plan;
}

// The --parallel contexts over one model (and, with a draft model, as many over the draft: *drafts), after
// checking that their memory plan fits: when it does not, the plan is printed and the message says how many
// slots would fit. A draft that cannot draft for the model (another vocabulary, larger) is refused here,
// before anything of it is allocated.
Result<std::vector<std::unique_ptr<llm::Context>>> MakeContexts(const ModelOptions& mo, const LoadedWeights& w, int parallel,
                                                                DraftOptions& draft, std::unique_ptr<llm::Model>* draft_model,
                                                                std::vector<std::unique_ptr<llm::Context>>* drafts) {
  llm::ContextParams cp;
  llm::PlanParams pp;
  ED_RETURN_IF_ERROR(ContextParamsFor(mo, w, &cp, &pp));
  pp.n_seqs = parallel;
  llm::MemoryPlan plan, extra;
  if (draft.on()) {
    ED_ASSIGN_OR_RETURN(extra, draft.Plan(*w.model, pp));
  }
  if (Status st = CheckPlanFits(*w.model, pp, &plan, draft.on() ? &extra : nullptr); !st.ok()) {
    if (st.code() != StatusCode::kResourceExhausted) return st;  // e.g. a malformed EDGEDECODE_AVAILABLE_MEMORY
    ED_ASSIGN_OR_RETURN(const uint64_t avail, llm::AvailableMemoryBytes());
    int fits = 0;
    for (int k = parallel - 1; k >= 1 && fits == 0; --k) {
      ED_ASSIGN_OR_RETURN(const llm::MemoryPlan p, PlanSlots(w, draft, pp, k));
      if (p.total <= avail) fits = k;
    }
    const std::string what =
        fits > 0 ? "--parallel " + std::to_string(fits) + " would fit at -c " + std::to_string(cp.n_ctx) +
                       " (or lower -c, or use --kv-type q8_0 / q4_0)"
                 : "not even --parallel 1 fits: lower -c, use --kv-type q8_0 / q4_0, or a smaller weight type (see edgedecode plan)";
    return ResourceExhausted("--parallel " + std::to_string(parallel) + " needs " + llm::FormatBytes(plan.total) + " but " +
                             llm::FormatBytes(avail) + " is available: " + what);
  }
  std::vector<std::unique_ptr<llm::Context>> ctxs;
  for (int i = 0; i < parallel; ++i) {
    ED_ASSIGN_OR_RETURN(auto c, llm::Context::Create(*w.model, cp));
    ctxs.push_back(std::move(c));
  }
  if (draft.on()) {
    // The draft's weights (repacked as the model's are), and one context per slot like the slot's own.
    ED_ASSIGN_OR_RETURN(*draft_model, draft.Load(*w.model, ctxs[0]->n_threads()));
    if (!mo.no_repack) (*draft_model)->RepackForKernels(w.isa);
    for (int i = 0; i < parallel; ++i) {
      auto c = llm::Context::Create(**draft_model, cp);
      if (!c.ok()) return c.status().WithContext("draft model");
      drafts->push_back(std::move(*c));
    }
  }
  return ctxs;
}

std::string Basename(const std::string& p) {
  const size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// Ends the HTTP listener however ServeMain returns.
struct Listener {
  httplib::Server& svr;
  std::thread thread;
  ~Listener() {
    svr.stop();
    if (thread.joinable()) thread.join();
  }
};

}  // namespace

int ServeMain(int argc, char** argv) {
  const std::string cmd = "edgedecode serve";
  CLI::App app{"An OpenAI-compatible HTTP service (chat and text completions, streaming) on this machine.", cmd};
  ModelOptions mo;
  mo.Add(app);
  ServeOptions so;
  app.add_option("--host", so.host, "address to listen on; beyond loopback needs --api-key or --no-auth")->capture_default_str();
  app.add_option("--port", so.port, "TCP port (0: any free port, printed)")->capture_default_str();
  app.add_option("--parallel,--np", so.parallel, "slots: requests generated at once, each with its own KV cache")->capture_default_str();
  app.add_option("--queue", so.queue, "requests that may wait for a slot; beyond it 429 (default: 4 x --parallel)");
  app.add_option("--api-key", so.api_key, "require 'Authorization: Bearer KEY' on every route but /health (or set "
                 "EDGEDECODE_API_KEY: a key on the command line is visible to other users in ps)")
      ->envname("EDGEDECODE_API_KEY");
  app.add_flag("--no-auth", so.no_auth, "allow a non-loopback --host without --api-key");
  app.add_option("--chat-template", so.chat_template, "a Jinja template FILE instead of the model's, for /v1/chat/completions");
  app.add_option("--max-body", so.max_body, "largest request body in bytes; beyond it 413")->capture_default_str();
  app.add_option("--lookup", so.spec.lookup, "speculative decoding by prompt lookup: up to N tokens that followed the last "
                 "n-gram earlier in the prompt or answer are verified with the next one in the same pass; the output is the "
                 "same as without it (0: off)")->capture_default_str();
  so.draft.Add(app);
  CLI::Option* self_spec_opt = so.self_spec.Add(app, false)->excludes("--draft")->excludes("--draft-quant");
  so.self_spec.AddBudget(app)->needs(self_spec_opt);
  so.draft_max_opt = app.add_option("--draft-max", so.spec.draft_max, "with --draft, --draft-quant or --self-spec: tokens drafted per verify pass")
                         ->check(CLI::Range(1, 64))
                         ->capture_default_str();
  // llama-server's spelling of --parallel (CLI11 takes single-dash names of one letter only).
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "-np") argv[i] = const_cast<char*>("--parallel");
  if (auto rc = Parse(app, argc, argv)) return *rc;
  if (Status st = Validate(so); !st.ok()) return Fail(cmd, st);
  if (Status st = so.draft.Validate(); !st.ok()) return Fail(cmd, st);
  if (Status st = mo.Validate(); !st.ok()) return Fail(cmd, st);
  if (so.queue < 0) so.queue = 4 * so.parallel;
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up is a failed write, not the end of the server
  InterruptScope interrupt;

  httplib::Server svr;
  serve::Api api({Basename(mo.model), so.api_key, so.max_body});
  api.Register(svr, std::max(8, 5 * so.parallel + so.queue + 4));
  const int port = so.port == 0 ? svr.bind_to_any_port(so.host) : (svr.bind_to_port(so.host, so.port) ? so.port : -1);
  if (port < 0) return Fail(cmd, IoError("cannot listen on " + so.host + ":" + std::to_string(so.port) + " (in use, or not an address of this machine)"));
  Listener listener{svr, std::thread([&svr] { svr.listen_after_bind(); })};
  std::fprintf(stderr, "%s: listening on http://%s:%d (loading %s)\n", cmd.c_str(), so.host.c_str(), port, mo.model.c_str());

  auto w = LoadWeights(mo);
  if (!w.ok()) return Fail(cmd, w.status());
  // Drafts are verified and rolled back in the slots' contexts: refused where the model cannot roll back.
  if (so.spec.lookup > 0 || so.draft.on() || so.self_spec.on())
    if (Status st = llm::SpeculativeSupported(w->model->config()); !st.ok()) return Fail(cmd, st);
  std::unique_ptr<llm::Model> draft_model;  // outlives the scheduler (declared before it)
  std::vector<std::unique_ptr<llm::Context>> drafts;
  auto ctxs = MakeContexts(mo, *w, so.parallel, so.draft, &draft_model, &drafts);
  if (!ctxs.ok()) return Fail(cmd, ctxs.status());
  // --self-spec: the skip set, as `run` resolves it without a long prompt (auto's search runs on the first
  // slot's context and empties it again; the API answers 503 meanwhile).
  if (so.self_spec.on()) {
    if (Status st = so.self_spec.Resolve(*(*ctxs)[0], {}, w->model->tokenizer()); !st.ok()) return Fail(cmd, st);
    so.spec.self_spec = so.self_spec.skip();
  }
  std::optional<ChatPrompt> chat;
  std::string chat_error;
  auto cp = ChatPrompt::Load(*w->model, so.chat_template);
  if (cp.ok()) {
    chat.emplace(std::move(*cp));
  } else if (!so.chat_template.empty()) {
    return Fail(cmd, cp.status());
  } else {
    chat_error = cp.status().message() + "; start serve with --chat-template FILE to use /v1/chat/completions";
  }
  const int n_ctx = (*ctxs)[0]->n_ctx(), n_threads = (*ctxs)[0]->n_threads();
  serve::Scheduler sched(std::move(*ctxs), w->model->tokenizer(), mo.n_batch, so.queue, so.spec, std::move(drafts));
  api.SetReady(*w->model, std::move(chat), chat_error, sched);
  const std::string drafting = so.draft.on()       ? ", draft " + std::to_string(so.spec.draft_max) + " (" + so.draft.Describe() + ")"
                               : so.self_spec.on() ? ", self-spec " + std::to_string(so.spec.draft_max) + " (" + so.self_spec.Describe() + ")"
                                                   : "";
  std::fprintf(stderr, "%s: ready: %d slot(s) x %d tokens of context, %d threads, queue %d%s%s%s\n", cmd.c_str(), so.parallel,
               n_ctx, n_threads, so.queue, drafting.c_str(), so.api_key.empty() ? "" : ", API key required",
               chat_error.empty() ? "" : " (no chat template: /v1/chat/completions answers 400)");

  while (!InterruptScope::requested()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Drain: refuse new work, let every accepted request finish (a second signal ends the process at once).
  std::fprintf(stderr, "%s: stopping: finishing %d request(s) in flight\n", cmd.c_str(), api.in_flight());
  api.StopAccepting();
  sched.StopAccepting();
  while (api.in_flight() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  svr.stop();
  listener.thread.join();  // no handler runs past here: the scheduler can go
  sched.Drain();
  std::fprintf(stderr, "%s: stopped\n", cmd.c_str());
  return 0;
}

}  // namespace edgedecode::cli
