// `edgedecode chat`: a multi-turn conversation in the terminal with the model's chat template. Each turn
// prefills only what is new (the KV cache keeps the conversation), Ctrl-C stops the current answer, Ctrl-D
// exits, /reset and /stats. With stdin not a terminal, turns are read line by line (scriptable).
#include <unistd.h>

#ifndef EDGEDECODE_NO_LIBEDIT
#include <editline/readline.h>
#endif

#include <cstdio>
#include <iostream>

#include "cli/chat_prompt.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/model_options.h"
#include "cli/signals.h"
#include "llm/prefix_reuse.h"

namespace edgedecode::cli {
namespace {

// One line of input: libedit (editing, history) on a terminal, plain lines otherwise. False at EOF.
bool ReadTurn(bool tty, std::string* line) {
#ifdef EDGEDECODE_NO_LIBEDIT
  if (tty) std::fputs("> ", stderr);
  return static_cast<bool>(std::getline(std::cin, *line));
#else
  if (!tty) return static_cast<bool>(std::getline(std::cin, *line));
  char* s = readline("> ");
  if (s == nullptr) return false;
  *line = s;
  if (!line->empty()) add_history(s);
  std::free(s);
  return true;
#endif
}

struct TurnStats {
  int prompt_tokens = 0, reused = 0, generated = 0;
  double prefill_s = 0, decode_s = 0;
};

}  // namespace

int ChatMain(int argc, char** argv) {
  const std::string cmd = "edgedecode chat";
  CLI::App app{"Chat with a model in the terminal using its chat template. Each turn prefills only the new text; "
               "Ctrl-C stops an answer, Ctrl-D exits; /reset starts over, /stats shows the last turn. When stdin is "
               "not a terminal, each line is one user turn.",
               cmd};
  ModelOptions mo;
  mo.Add(app);
  SamplerOptions so;
  so.Add(app);
  std::string system, template_path;
  int n_predict = 512;
  app.add_option("--system", system, "system prompt");
  app.add_option("--chat-template", template_path, "Jinja chat template FILE instead of the model's");
  app.add_option("-n,--n-predict", n_predict, "at most this many tokens per answer")->capture_default_str();
  if (auto rc = Parse(app, argc, argv)) return *rc;
  if (n_predict < 1) return Fail(cmd, InvalidArgument("-n must be >= 1"));
  if (Status st = so.Finish(); !st.ok()) return Fail(cmd, st);
  auto loaded = LoadModel(mo);
  if (!loaded.ok()) return Fail(cmd, loaded.status());
  auto prompt = ChatPrompt::Load(*loaded->model, template_path);
  if (!prompt.ok()) return Fail(cmd, prompt.status());
  llm::Context& ctx = *loaded->ctx;
  const tok::Tokenizer& tk = loaded->model->tokenizer();
  const bool tty = ::isatty(STDIN_FILENO) == 1;
  if (tty)
    std::fprintf(stderr, "chat: %s, template %s (%s), context %d tokens, seed %llu. Ctrl-D exits; /reset, /stats.\n",
                 mo.model.c_str(), prompt->family().c_str(), prompt->source().c_str(), ctx.n_ctx(),
                 static_cast<unsigned long long>(so.params.seed));

  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  auto reset = [&] {
    messages = nlohmann::ordered_json::array();
    if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  };
  reset();
  std::vector<int32_t> cached;  // the tokens in the KV cache, positions 0..n_past-1
  llm::Sampler sampler(so.params);
  TurnStats last;
  std::string line;
  InterruptScope interrupt;
  while (ReadTurn(tty, &line)) {
    InterruptScope::Clear();  // a Ctrl-C at the prompt or in the last answer is spent
    if (line == "/reset") {
      reset();
      cached.clear();
      ctx.Reset();
      std::fprintf(stderr, "chat: conversation reset\n");
      continue;
    }
    if (line == "/stats") {
      std::fprintf(stderr, "last turn: prompt %d tokens (%d reused from the cache, %d prefilled, %.1f tok/s), answer %d tokens "
                           "(%.1f tok/s); cache %d of %d tokens\n",
                   last.prompt_tokens, last.reused, last.prompt_tokens - last.reused,
                   (last.prompt_tokens - last.reused) / std::max(last.prefill_s, 1e-9), last.generated,
                   last.generated > 1 ? (last.generated - 1) / std::max(last.decode_s, 1e-9) : 0.0, ctx.n_past(), ctx.n_ctx());
      continue;
    }
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    auto toks = prompt->Tokens(messages);
    if (!toks.ok()) return Fail(cmd, toks.status());
    if (static_cast<int>(toks->size()) + 1 >= ctx.n_ctx()) {
      messages.erase(messages.end() - 1);
      std::fprintf(stderr, "chat: the conversation (%zu tokens) no longer fits the context of %d: /reset, or a larger -c\n",
                   toks->size(), ctx.n_ctx());
      continue;
    }
    TurnStats t;
    t.prompt_tokens = static_cast<int>(toks->size());
    const auto t0 = Clock::now();
    if (Status st = llm::EvalReusingPrefix(ctx, cached, *toks, mo.n_batch, &t.reused); !st.ok()) return Fail(cmd, st);
    const auto t1 = Clock::now();
    t.prefill_s = Seconds(t0, t1);
    for (int32_t tok : *toks) sampler.Accept(tok);
    std::string answer;
    tok::Utf8Stream utf8;
    bool stopped = false;
    for (int i = 0; i < n_predict && ctx.n_past() < ctx.n_ctx(); ++i) {
      const int32_t next = sampler.Sample(ctx.logits(0), ctx.n_vocab());
      if (tk.IsEndOfGeneration(next)) break;
      const std::string s = utf8.Push(tk.TokenToPiece(next));
      answer += s;
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fflush(stdout);
      ++t.generated;
      if (InterruptScope::requested()) {
        stopped = true;
        break;
      }
      if (Status st = ctx.Eval(&next, 1, false); !st.ok()) return Fail(cmd, st);
      cached.push_back(next);
    }
    const std::string rest = utf8.Flush();
    answer += rest;
    std::fwrite(rest.data(), 1, rest.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    t.decode_s = Seconds(t1, Clock::now());
    last = t;
    messages.push_back({{"role", "assistant"}, {"content", answer}});
    if (stopped) {
      if (!tty) return ToInt(InterruptScope::exit_code());  // a script interrupted: stop there
      std::fprintf(stderr, "[answer stopped]\n");
    }
  }
  if (tty) std::fputc('\n', stderr);
  return 0;
}

}  // namespace edgedecode::cli
