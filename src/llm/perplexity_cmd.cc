// `edgedecode perplexity`: perplexity of a model over a text file, in windows of the context size, and
// KL divergence against base log-probabilities saved by an earlier run (to measure what a weight type
// or KV type costs in quality).
//
// Windows follow llama.cpp's perplexity tool: the text is cut into chunks of n_ctx tokens, each chunk is
// evaluated from an empty cache (BOS first when the vocab adds one), and only the second half of each
// chunk is scored, so every scored token has at least n_ctx/2 tokens of context.
//
// Saved logits file (--save-logits), little-endian:
//   char[8] "EDLOGPR1" | u32 n_vocab | u32 n_ctx | u64 n_scored | u64 fnv1a64 of the token ids
//   then n_scored rows of n_vocab float32 log-probabilities.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "llm/context.h"
#include "llm/model.h"
#include "llm/cli_options.h"

namespace edgedecode::cli {
namespace {

uint64_t Fnv1a(const std::vector<int32_t>& ids) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t t : ids) {
    for (int b = 0; b < 4; ++b) {
      h ^= static_cast<uint8_t>(static_cast<uint32_t>(t) >> (8 * b));
      h *= 1099511628211ull;
    }
  }
  return h;
}

struct LogitsHeader {
  char magic[8];
  uint32_t n_vocab;
  uint32_t n_ctx;
  uint64_t n_scored;
  uint64_t ids_hash;
};

}  // namespace

int PerplexityMain(int argc, char** argv) {
  CLI::App app{"Perplexity over a text file, and KL divergence against saved base log-probabilities.",
               "edgedecode perplexity"};
  ModelOptions mo;
  mo.n_ctx = 512;
  mo.Add(app);
  std::string text_path, save_path, base_path;
  int max_chunks = 0;
  bool json = false;
  app.add_option("-f,--file", text_path, "UTF-8 text file")->required();
  app.add_option("--chunks", max_chunks, "score at most this many windows (0 = all)");
  auto* save = app.add_option("--save-logits", save_path, "write the log-probabilities of every scored position (the base for --kld-base)");
  app.add_option("--kld-base", base_path, "compare with log-probabilities saved by --save-logits: mean KL(base || this)")->excludes(save);
  app.add_flag("--json", json, "print the result as one JSON object");
  CLI11_PARSE(app, argc, argv);

  auto fail = [](int code, const std::string& msg) {
    std::fprintf(stderr, "edgedecode: %s\n", msg.c_str());
    return code;
  };
  const std::string& model_path = mo.model;
  if (mo.n_ctx < 8) return fail(2, "-c must be at least 8");
  std::ifstream in(text_path, std::ios::binary);
  if (!in) return fail(3, text_path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  auto loaded = LoadModel(mo);
  if (!loaded.ok()) return Fail(loaded.status());
  const llm::Model& m = *loaded->model;
  llm::Context& c = *loaded->ctx;
  const int n_ctx = c.n_ctx();
  const tok::Tokenizer& tk = m.tokenizer();
  std::vector<int32_t> ids = tk.Encode(ss.str(), false);
  const bool add_bos = tk.add_bos_default() && tk.bos() >= 0;
  const int body = n_ctx - (add_bos ? 1 : 0);  // text tokens per window
  const int n_chunks_all = static_cast<int>(ids.size()) / body;
  const int n_chunks = max_chunks > 0 ? std::min(max_chunks, n_chunks_all) : n_chunks_all;
  if (n_chunks < 1)
    return fail(2, text_path + ": " + std::to_string(ids.size()) + " tokens is less than one window of " + std::to_string(body) +
                       " (use a smaller -c)");
  ids.resize(static_cast<size_t>(n_chunks) * body);

  const int nv = c.n_vocab();
  const int first_scored = n_ctx / 2;  // window position of the first scored prediction
  const uint64_t n_scored_total = static_cast<uint64_t>(n_chunks) * (n_ctx - 1 - first_scored);

  FILE* save_f = nullptr;
  FILE* base_f = nullptr;
  LogitsHeader hdr{{'E', 'D', 'L', 'O', 'G', 'P', 'R', '1'}, static_cast<uint32_t>(nv), static_cast<uint32_t>(n_ctx),
                   n_scored_total, Fnv1a(ids)};
  if (!save_path.empty()) {
    save_f = std::fopen(save_path.c_str(), "wb");
    if (!save_f) return fail(3, save_path + ": cannot create");
    std::fwrite(&hdr, sizeof hdr, 1, save_f);
  }
  if (!base_path.empty()) {
    base_f = std::fopen(base_path.c_str(), "rb");
    if (!base_f) return fail(3, base_path + ": cannot open");
    LogitsHeader bh;
    if (std::fread(&bh, sizeof bh, 1, base_f) != 1 || std::memcmp(bh.magic, hdr.magic, 8) != 0)
      return fail(3, base_path + ": not a --save-logits file");
    if (bh.n_vocab != hdr.n_vocab || bh.n_ctx != hdr.n_ctx || bh.n_scored != hdr.n_scored || bh.ids_hash != hdr.ids_hash)
      return fail(2, base_path + ": saved with another vocabulary, context size or text (n_vocab " + std::to_string(bh.n_vocab) +
                         ", ctx " + std::to_string(bh.n_ctx) + ", positions " + std::to_string(bh.n_scored) + ")");
  }

  double nll = 0, nll2 = 0, kld = 0, kld_max = 0;
  uint64_t n = 0, top1_same = 0;
  std::vector<float> logp(static_cast<size_t>(nv)), base(static_cast<size_t>(nv));
  std::vector<int32_t> window(static_cast<size_t>(n_ctx));
  auto t0 = std::chrono::steady_clock::now();
  for (int ch = 0; ch < n_chunks; ++ch) {
    size_t w = 0;
    if (add_bos) window[w++] = tk.bos();
    std::copy(ids.begin() + static_cast<long>(ch) * body, ids.begin() + static_cast<long>(ch + 1) * body, window.begin() + static_cast<long>(w));
    c.Reset();
    Status st = c.Eval(window.data(), n_ctx, true);
    if (!st.ok()) return fail(1, st.message());
    for (int i = first_scored; i < n_ctx - 1; ++i) {
      const float* lg = c.logits(i);
      double mx = lg[0];
      for (int v = 1; v < nv; ++v) mx = std::max(mx, static_cast<double>(lg[v]));
      double sum = 0;
      for (int v = 0; v < nv; ++v) sum += std::exp(static_cast<double>(lg[v]) - mx);
      const double lse = mx + std::log(sum);
      for (int v = 0; v < nv; ++v) logp[static_cast<size_t>(v)] = static_cast<float>(lg[v] - lse);
      const double l = -logp[static_cast<size_t>(window[static_cast<size_t>(i + 1)])];
      nll += l;
      nll2 += l * l;
      ++n;
      if (save_f) std::fwrite(logp.data(), 4, logp.size(), save_f);
      if (base_f) {
        if (std::fread(base.data(), 4, base.size(), base_f) != base.size()) return fail(3, base_path + ": truncated");
        double k = 0;
        int a1 = 0, b1 = 0;
        for (int v = 0; v < nv; ++v) {
          const double pb = std::exp(static_cast<double>(base[static_cast<size_t>(v)]));
          k += pb * (base[static_cast<size_t>(v)] - logp[static_cast<size_t>(v)]);
          if (base[static_cast<size_t>(v)] > base[static_cast<size_t>(a1)]) a1 = v;
          if (logp[static_cast<size_t>(v)] > logp[static_cast<size_t>(b1)]) b1 = v;
        }
        kld += k;
        kld_max = std::max(kld_max, k);
        top1_same += a1 == b1;
      }
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "\r[%d/%d] ppl %.4f  (%.1f s, ~%.0f s left)   ", ch + 1, n_chunks, std::exp(nll / n), secs,
                 secs / (ch + 1) * (n_chunks - ch - 1));
  }
  std::fprintf(stderr, "\n");
  if (save_f) std::fclose(save_f);
  if (base_f) std::fclose(base_f);
  const double mean = nll / n;
  const double var = std::max(0.0, nll2 / n - mean * mean);
  const double ppl = std::exp(mean);
  const double ppl_err = ppl * std::sqrt(var / n);  // delta method
  if (json) {
    nlohmann::json j = {{"model", model_path}, {"file", text_path}, {"ctx", n_ctx}, {"chunks", n_chunks},
                        {"tokens_scored", n}, {"ppl", ppl}, {"ppl_stderr", ppl_err}};
    if (base_f) j.update({{"kld_mean", kld / n}, {"kld_max", kld_max}, {"top1_agreement", static_cast<double>(top1_same) / n}});
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("perplexity %.4f +/- %.4f over %llu tokens (%d windows of %d)\n", ppl, ppl_err,
                static_cast<unsigned long long>(n), n_chunks, n_ctx);
    if (base_f)
      std::printf("KL divergence vs base: mean %.6f, max %.6f nats; top-1 agreement %.2f%%\n", kld / n, kld_max,
                  100.0 * top1_same / n);
  }
  return 0;
}

}  // namespace edgedecode::cli
