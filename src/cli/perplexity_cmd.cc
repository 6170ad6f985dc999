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
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/temp_path.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/model_options.h"
#include "cli/output_file.h"
#include "cli/signals.h"

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

// One row of a --kld-base file must be log-probabilities: each finite or -inf, none above 0, and their
// probabilities summing to 1 (a row of NaN, or of zeros, would make the KL divergence NaN or meaningless).
// Errors name the byte offset in the file.
Status CheckBaseRow(const std::vector<float>& row, uint64_t position, const std::string& path) {
  const uint64_t row_at = sizeof(LogitsHeader) + position * row.size() * 4;
  double sum = 0;
  for (size_t v = 0; v < row.size(); ++v) {
    const float x = row[v];
    if (std::isnan(x) || x == INFINITY || x > 1e-3f) {
      return Corrupt(path + ": offset " + std::to_string(row_at + v * 4) + " (position " + std::to_string(position) +
                     ", token " + std::to_string(v) + "): " + std::to_string(x) + " is not a log-probability");
    }
    sum += std::exp(static_cast<double>(x));
  }
  if (!(std::fabs(sum - 1.0) <= 1e-2))
    return Corrupt(path + ": offset " + std::to_string(row_at) + " (position " + std::to_string(position) +
                   "): the row's probabilities sum to " + std::to_string(sum) + ", not 1");
  return Status::Ok();
}

}  // namespace

int PerplexityMain(int argc, char** argv) {
  const std::string cmd = "edgedecode perplexity";
  CLI::App app{"Perplexity over a text file, and KL divergence against saved base log-probabilities.", cmd};
  ModelOptions mo;
  mo.n_ctx = 512;
  mo.Add(app);
  std::string text_path, save_path, base_path;
  int max_chunks = 0;
  bool no_progress = false;
  JsonOutput json;
  app.add_option("-f,--file", text_path, "UTF-8 text file ('-': stdin)")->required();
  app.add_option("--chunks", max_chunks, "score at most this many windows (0 = all)");
  auto* save = app.add_option("--save-logits", save_path, "write the log-probabilities of every scored position to FILE (the base for --kld-base)");
  app.add_option("--kld-base", base_path, "compare with log-probabilities saved by --save-logits: mean KL(base || this)")->excludes(save);
  json.Add(app, "the result");
  AddNoProgress(app, &no_progress);
  if (auto rc = Parse(app, argc, argv)) return *rc;

  const std::string& model_path = mo.model;
  if (mo.n_ctx < 8) return Fail(cmd, InvalidArgument("-c must be at least 8"));
  if (max_chunks < 0) return Fail(cmd, InvalidArgument("--chunks must be >= 0"));
  if (!save_path.empty()) {
    if (Status st = CheckOutputIsNotInput(save_path, {model_path, text_path, base_path}, "--save-logits"); !st.ok())
      return Fail(cmd, st);
  }
  auto text = ReadInputText(text_path);
  if (!text.ok()) return Fail(cmd, text.status());
  auto loaded = LoadModel(mo);
  if (!loaded.ok()) return Fail(cmd, loaded.status());
  const llm::Model& m = *loaded->model;
  llm::Context& c = *loaded->ctx;
  const int n_ctx = c.n_ctx();
  const tok::Tokenizer& tk = m.tokenizer();
  std::vector<int32_t> ids = tk.Encode(*text, false);
  const bool add_bos = tk.add_bos_default() && tk.bos() >= 0;
  const int body = n_ctx - (add_bos ? 1 : 0);  // text tokens per window
  const int n_chunks_all = static_cast<int>(ids.size()) / body;
  const int n_chunks = max_chunks > 0 ? std::min(max_chunks, n_chunks_all) : n_chunks_all;
  if (n_chunks < 1)
    return Fail(cmd, InvalidArgument(text_path + ": " + std::to_string(ids.size()) + " tokens is less than one window of " +
                                     std::to_string(body) + " (use a smaller -c)"));
  ids.resize(static_cast<size_t>(n_chunks) * body);

  const int nv = c.n_vocab();
  const int first_scored = n_ctx / 2;  // window position of the first scored prediction
  const uint64_t n_scored_total = static_cast<uint64_t>(n_chunks) * (n_ctx - 1 - first_scored);

  FILE* save_f = nullptr;
  FILE* base_f = nullptr;
  const std::string save_tmp = save_path.empty() ? "" : TempPathFor(save_path);
  auto fail = [&](const Status& st) {
    if (save_f) std::fclose(save_f);
    if (base_f) std::fclose(base_f);
    if (!save_tmp.empty()) std::remove(save_tmp.c_str());
    return Fail(cmd, st);
  };
  LogitsHeader hdr{{'E', 'D', 'L', 'O', 'G', 'P', 'R', '1'}, static_cast<uint32_t>(nv), static_cast<uint32_t>(n_ctx),
                   n_scored_total, Fnv1a(ids)};
  if (!base_path.empty()) {
    base_f = std::fopen(base_path.c_str(), "rb");
    if (!base_f) return fail(NotFound(base_path + ": cannot open"));
    LogitsHeader bh;
    if (std::fread(&bh, sizeof bh, 1, base_f) != 1 || std::memcmp(bh.magic, hdr.magic, 8) != 0)
      return fail(Corrupt(base_path + ": not a --save-logits file"));
    if (bh.n_vocab != hdr.n_vocab || bh.n_ctx != hdr.n_ctx || bh.n_scored != hdr.n_scored || bh.ids_hash != hdr.ids_hash)
      return fail(InvalidArgument(base_path + ": saved with another vocabulary, context size or text (n_vocab " +
                                  std::to_string(bh.n_vocab) + ", ctx " + std::to_string(bh.n_ctx) + ", positions " +
                                  std::to_string(bh.n_scored) + ")"));
    // The header matches this run, so n_scored x n_vocab is this run's own (bounded) size.
    const uint64_t want = sizeof bh + bh.n_scored * bh.n_vocab * 4;
    struct stat st {};
    if (::fstat(fileno(base_f), &st) != 0 || static_cast<uint64_t>(st.st_size) != want)
      return fail(Corrupt(base_path + ": " + std::to_string(st.st_size) + " bytes, but its header (" +
                          std::to_string(bh.n_scored) + " positions of " + std::to_string(bh.n_vocab) +
                          " log-probabilities) implies " + std::to_string(want) + (static_cast<uint64_t>(st.st_size) < want ? " (truncated)" : " (trailing data)")));
  }
  if (!save_path.empty()) {
    save_f = std::fopen(save_tmp.c_str(), "wb");
    if (!save_f) return fail(IoError(save_path + ": cannot create " + save_tmp));
    std::fwrite(&hdr, sizeof hdr, 1, save_f);
  }
  InterruptScope interrupt(save_tmp);
  Progress progress(!no_progress);

  double nll = 0, nll2 = 0, kld = 0, kld_max = 0;
  uint64_t n = 0, top1_same = 0;
  int chunks_done = 0;
  std::vector<float> logp(static_cast<size_t>(nv)), base(static_cast<size_t>(nv));
  std::vector<int32_t> window(static_cast<size_t>(n_ctx));
  auto t0 = std::chrono::steady_clock::now();
  for (int ch = 0; ch < n_chunks && !InterruptScope::requested(); ++ch) {
    size_t w = 0;
    if (add_bos) window[w++] = tk.bos();
    std::copy(ids.begin() + static_cast<long>(ch) * body, ids.begin() + static_cast<long>(ch + 1) * body, window.begin() + static_cast<long>(w));
    c.Reset();
    if (Status st = c.Eval(window.data(), n_ctx, true); !st.ok()) return fail(st);
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
        if (std::fread(base.data(), 4, base.size(), base_f) != base.size()) return fail(Corrupt(base_path + ": truncated"));
        if (Status st = CheckBaseRow(base, n - 1, base_path); !st.ok()) return fail(st);
        double k = 0;
        int a1 = 0, b1 = 0;
        for (int v = 0; v < nv; ++v) {
          const float bv = base[static_cast<size_t>(v)];
          const double pb = std::exp(static_cast<double>(bv));
          if (pb > 0) k += pb * (bv - logp[static_cast<size_t>(v)]);
          if (bv > base[static_cast<size_t>(a1)]) a1 = v;
          if (logp[static_cast<size_t>(v)] > logp[static_cast<size_t>(b1)]) b1 = v;
        }
        kld += k;
        kld_max = std::max(kld_max, k);
        top1_same += a1 == b1;
      }
    }
    ++chunks_done;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    char line[160];
    std::snprintf(line, sizeof line, "[%d/%d] ppl %.4f  (%.1f s, ~%.0f s left)", ch + 1, n_chunks, std::exp(nll / n), secs,
                  secs / (ch + 1) * (n_chunks - ch - 1));
    progress.Update(line);
  }
  progress.Done();
  const bool interrupted = InterruptScope::requested();
  if (base_f) std::fclose(base_f);
  if (save_f) {
    const bool ok = std::fclose(save_f) == 0;
    save_f = nullptr;
    if (interrupted) {
      std::remove(save_tmp.c_str());  // a partial base would not match the text's hash
    } else if (!ok || std::rename(save_tmp.c_str(), save_path.c_str()) != 0) {
      std::remove(save_tmp.c_str());
      return Fail(cmd, IoError(save_path + ": cannot write"));
    }
  }
  if (n == 0) {
    std::fprintf(stderr, "perplexity: interrupted before the first window was scored\n");
    return ToInt(InterruptScope::exit_code());
  }
  const double mean = nll / n;
  const double var = std::max(0.0, nll2 / n - mean * mean);
  const double ppl = std::exp(mean);
  const double ppl_err = ppl * std::sqrt(var / n);  // delta method
  FILE* out = json.text();
  std::fprintf(out, "perplexity %.4f +/- %.4f over %llu tokens (%d windows of %d)%s\n", ppl, ppl_err,
               static_cast<unsigned long long>(n), chunks_done, n_ctx, interrupted ? ", interrupted" : "");
  if (!base_path.empty())
    std::fprintf(out, "KL divergence vs base: mean %.6f, max %.6f nats; top-1 agreement %.2f%%\n", kld / n, kld_max,
                 100.0 * top1_same / n);
  if (json.on()) {
    nlohmann::json j = {{"model", model_path}, {"file", text_path}, {"ctx", n_ctx}, {"chunks", chunks_done},
                        {"tokens_scored", n}, {"ppl", ppl}, {"ppl_stderr", ppl_err}, {"interrupted", interrupted}};
    if (!base_path.empty()) j.update({{"kld_mean", kld / n}, {"kld_max", kld_max}, {"top1_agreement", static_cast<double>(top1_same) / n}});
    if (Status st = json.Write(j, "perplexity", {model_path, text_path, base_path}); !st.ok()) return Fail(cmd, st);
  }
  return interrupted ? ToInt(InterruptScope::exit_code()) : 0;
}

}  // namespace edgedecode::cli
