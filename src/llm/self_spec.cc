#include "llm/self_spec.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/json_depth.h"
#include "base/temp_path.h"

namespace edgedecode::llm {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

int32_t Argmax(const float* row, int n) { return static_cast<int32_t>(std::max_element(row, row + n) - row); }

std::vector<bool> Flags(const std::vector<int>& skip, int n_layers) {
  std::vector<bool> f(static_cast<size_t>(n_layers), false);
  for (int l : skip) f[static_cast<size_t>(l)] = true;
  return f;
}

// A whole non-negative decimal number of at most 9 digits, else -1.
int ParseLayerNumber(const std::string& s) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return -1;
  return std::stoi(s);
}

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

}  // namespace

Status CheckSkipSet(const std::vector<int>& skip, int n_layers) {
  std::vector<bool> seen(static_cast<size_t>(std::max(n_layers, 0)), false);
  for (int l : skip) {
    if (l < 0 || l >= n_layers)
      return InvalidArgument("layer " + std::to_string(l) + " is out of range: the model has " + std::to_string(n_layers) +
                             " layers (0.." + std::to_string(n_layers - 1) + ")");
    if (seen[static_cast<size_t>(l)]) return InvalidArgument("layer " + std::to_string(l) + " is given twice");
    seen[static_cast<size_t>(l)] = true;
  }
  if (skip.empty()) return InvalidArgument("no layer to skip");
  if (static_cast<int>(skip.size()) >= n_layers)
    return InvalidArgument("every layer (" + std::to_string(n_layers) + ") is skipped: a draft needs at least one layer");
  return Status::Ok();
}

Result<std::vector<int>> ParseSkipLayers(const std::string& text, int n_layers) {
  std::vector<int> skip;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string item = Trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    const size_t dash = item.find('-');
    const int lo = ParseLayerNumber(dash == std::string::npos ? item : Trim(item.substr(0, dash)));
    const int hi = dash == std::string::npos ? lo : ParseLayerNumber(Trim(item.substr(dash + 1)));
    if (lo < 0 || hi < 0)
      return InvalidArgument("'" + item + "' in '" + text + "' is not a layer number or a range of them (e.g. 4-7,10)");
    if (hi < lo) return InvalidArgument("the range '" + item + "' runs backwards");
    if (hi >= n_layers) {
      return InvalidArgument("layer " + std::to_string(hi) + " is out of range: the model has " + std::to_string(n_layers) +
                             " layers (0.." + std::to_string(n_layers - 1) + ")");
    }
    for (int l = lo; l <= hi; ++l) skip.push_back(l);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(skip.begin(), skip.end());
  if (auto dup = std::adjacent_find(skip.begin(), skip.end()); dup != skip.end())
    return InvalidArgument("layer " + std::to_string(*dup) + " is given twice");
  ED_RETURN_IF_ERROR(CheckSkipSet(skip, n_layers));
  return skip;
}

std::string FormatSkipLayers(const std::vector<int>& skip) {
  std::string s;
  for (size_t i = 0; i < skip.size();) {
    size_t j = i;
    while (j + 1 < skip.size() && skip[j + 1] == skip[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(skip[i]);
    if (j > i) s += '-' + std::to_string(skip[j]);
    i = j + 1;
  }
  return s;
}

SelfSpecDrafter::SelfSpecDrafter(Context& ctx, const std::vector<int>& skip)
    : ctx_(ctx), flags_(Flags(skip, ctx.model().config().n_layers)) {}

int SelfSpecDrafter::Length(const std::vector<int32_t>& history, int n_draft) const {
  // One pass per drafted token, the first over the token the cache has not seen; they must fit, and stay
  // within a batch so that Truncate can roll sliding-window rings back.
  n_draft = std::min(n_draft, ctx_.n_batch() - 1);
  if (broken_ || n_draft <= 0 || history.empty() || ctx_.n_past() + n_draft > ctx_.n_ctx()) return 0;
  return n_draft;
}

std::vector<int32_t> SelfSpecDrafter::operator()(const std::vector<int32_t>& history, int n_draft) {
  std::vector<int32_t> draft;
  n_draft = Length(history, n_draft);
  const int base = ctx_.n_past();
  if (n_draft == 0) return draft;
  const auto t0 = Clock::now();
  ++stats_.calls;
  ctx_.SetSkipLayers(flags_);
  int32_t t = history.back();
  for (int i = 0; i < n_draft; ++i) {
    if (!ctx_.Eval(&t, 1, false).ok()) {  // a draft is only a proposal: keep what came before
      broken_ = true;
      break;
    }
    ++stats_.evals;
    t = Argmax(ctx_.logits(0), ctx_.n_vocab());
    draft.push_back(t);
  }
  ctx_.SetSkipLayers({});
  ctx_.Truncate(base);
  stats_.seconds += Seconds(t0, Clock::now());
  return draft;
}

void SelfSpecDrafter::DraftMany(std::vector<Request>& requests) {
  std::vector<Request*> shared;
  std::vector<int> length, base;
  std::vector<int32_t> token;  // each shared request's token of the next step (one row each)
  int longest = 0;
  for (Request& r : requests) {
    r.draft.clear();
    SelfSpecDrafter& d = *r.drafter;
    if (d.alone_) {
      r.draft = d(*r.history, r.n_draft);
      continue;
    }
    const int n = d.Length(*r.history, r.n_draft);
    if (n == 0) continue;
    shared.push_back(&r);
    length.push_back(n);
    base.push_back(d.ctx_.n_past());
    token.push_back(r.history->back());
    longest = std::max(longest, n);
    ++d.stats_.calls;
    d.ctx_.SetSkipLayers(d.flags_);  // every context of a shared pass skips the same layers (EvalMulti checks)
  }
  const auto t_shared = Clock::now();
  std::vector<SeqTokens> rows;
  std::vector<size_t> who;
  for (int step = 0; step < longest; ++step) {
    rows.clear();
    who.clear();
    for (size_t i = 0; i < shared.size(); ++i)
      if (step < length[i]) rows.push_back({&shared[i]->drafter->ctx_, &token[i], 1, false}), who.push_back(i);
    if (rows.empty()) break;
    const bool ok = Context::EvalMulti(rows).ok();
    for (size_t i : who) {
      SelfSpecDrafter& d = *shared[i]->drafter;
      if (!ok) {  // a draft is only a proposal: keep what came before
        d.alone_ = true;
        length[i] = step;
        continue;
      }
      ++d.stats_.evals;
      token[i] = Argmax(d.ctx_.logits(0), d.ctx_.n_vocab());
      shared[i]->draft.push_back(token[i]);
    }
  }
  const double each = shared.empty() ? 0 : Seconds(t_shared, Clock::now()) / static_cast<double>(shared.size());
  for (size_t i = 0; i < shared.size(); ++i) {
    SelfSpecDrafter& d = *shared[i]->drafter;
    d.ctx_.SetSkipLayers({});
    d.ctx_.Truncate(base[i]);
    d.stats_.seconds += each;
  }
}

Result<ModelIdentity> IdentifyModel(const gguf::File& file) {
  const std::string& path = file.path();
  const uint64_t n = file.data_offset();
  if (n > file.file_size()) return Corrupt(path + ": tensor data offset " + std::to_string(n) + " is past the file's end");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError(path + ": cannot open to identify the model: " + std::strerror(errno));
  // FNV-1a, 64 bits: an identity check against a file replaced or edited, not against an adversary (the
  // runtime core links no cryptography library).
  uint64_t h = 0xcbf29ce484222325ull;
  std::vector<unsigned char> buf(1 << 16);
  uint64_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, buf.data(), static_cast<size_t>(std::min<uint64_t>(buf.size(), n - done)), static_cast<off_t>(done));
    if (got <= 0) {
      const std::string why = got < 0 ? std::strerror(errno) : "the file is shorter than its header";
      ::close(fd);
      return IoError(path + ": cannot read the header to identify the model: " + why);
    }
    for (ssize_t i = 0; i < got; ++i) h = (h ^ buf[static_cast<size_t>(i)]) * 0x100000001b3ull;
    done += static_cast<uint64_t>(got);
  }
  ::close(fd);
  ModelIdentity id;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  id.header_hash = hex;
  id.file_size = file.file_size();
  return id;
}

const char* SelfSpecCalibrationText() {
  return "Once upon a time, in a small village near the sea, there lived a girl named Mia. Every morning she walked "
         "to the harbor with her grandfather to watch the boats come in. The fishermen waved to her, and she waved "
         "back with a big smile. One day a storm came, and the sky turned dark and gray. The wind was loud and the "
         "waves were very high. Mia was scared, but her grandfather held her hand and said, \"Do not worry. The "
         "storm will pass, and the sun will shine again.\" They went home and drank warm milk by the fire. When the "
         "storm was over, Mia ran outside. The sand was wet and the air smelled fresh and clean. She found a shiny "
         "shell on the beach and gave it to her grandfather. He smiled and said it was the most beautiful gift he "
         "had ever received. From that day on, Mia knew that after every storm there is something good to find. "
         "The next morning the boats went out again, and the village was happy and busy once more.";
}

double SelfSpecSpeedup(double a, int k, double c, double b) {
  const double tokens = a >= 1 - 1e-12 ? k + 1.0 : (1 - std::pow(a, k + 1)) / (1 - a);
  return tokens / (k * c + 1 + b * k);
}

namespace {

// The top-1 token of every position of `toks` (teacher forcing), with the context's current skip set.
Result<std::vector<int32_t>> TopTokens(Context& ctx, const std::vector<int32_t>& toks) {
  ctx.Reset();
  std::vector<int32_t> top;
  top.reserve(toks.size());
  for (size_t i = 0; i < toks.size(); i += static_cast<size_t>(ctx.n_batch())) {
    const int m = static_cast<int>(std::min(toks.size() - i, static_cast<size_t>(ctx.n_batch())));
    ED_RETURN_IF_ERROR(ctx.Eval(toks.data() + i, m, true));
    for (int r = 0; r < m; ++r) top.push_back(Argmax(ctx.logits(r), ctx.n_vocab()));
  }
  return top;
}

size_t LayerBytes(const LayerWeights& L) {
  return L.wq.nbytes() + L.wk.nbytes() + L.wv.nbytes() + L.wo.nbytes() + L.w_gate.nbytes() + L.w_up.nbytes() + L.w_down.nbytes();
}

// A draft step's cost over a full step's: the weight bytes it streams (the kept layers' and the output's).
double DraftCost(const Model& m, const std::vector<bool>& skip) {
  double all = static_cast<double>(m.output().nbytes()), kept = all;
  for (size_t l = 0; l < m.layers().size(); ++l) {
    const double b = static_cast<double>(LayerBytes(m.layers()[l]));
    all += b;
    if (!skip[l]) kept += b;
  }
  return kept / all;
}

// After TopTokens over `toks` (the full model): the extra cost of a verify pass's drafted token in full
// steps, (time of a pass over 1 + k tokens / time of a one-token step - 1) / k, the fastest of 3 of each.
double MeasureVerifyExtra(Context& ctx, const std::vector<int32_t>& toks, int k) {
  const int n = static_cast<int>(toks.size());
  const int at = n - 1 - k;  // both passes end at the last position
  double plain = 1e30, verify = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    ctx.Truncate(at);
    auto t0 = Clock::now();
    if (!ctx.Eval(toks.data() + at, 1, false).ok()) return 1.0;
    plain = std::min(plain, Seconds(t0, Clock::now()));
    ctx.Truncate(at);
    t0 = Clock::now();
    if (!ctx.Eval(toks.data() + at, k + 1, true).ok()) return 1.0;
    verify = std::min(verify, Seconds(t0, Clock::now()));
  }
  return std::max(0.0, (verify / std::max(plain, 1e-9) - 1) / k);
}

// The best draft length for a set and its expected speedup.
std::pair<int, double> BestLength(double a, double c, double b, int max_draft) {
  std::pair<int, double> best{1, 0.0};
  for (int k = 1; k <= max_draft; ++k) {
    const double s = SelfSpecSpeedup(a, k, c, b);
    if (s > best.second) best = {k, s};
  }
  return best;
}

Result<SelfSpecChoice> Search(Context& ctx, const std::vector<int32_t>& toks, const SelfSpecSearchParams& params) {
  const Model& model = ctx.model();
  const int n_layers = model.config().n_layers;
  ED_ASSIGN_OR_RETURN(const std::vector<int32_t> full, TopTokens(ctx, toks));
  const int k_max = std::max(1, std::min({params.max_draft, ctx.n_batch() - 1, static_cast<int>(toks.size()) - 2}));
  SelfSpecChoice best;
  best.verify_extra = MeasureVerifyExtra(ctx, toks, k_max);
  best.calibration_tokens = static_cast<int>(toks.size());
  std::vector<bool> skip(static_cast<size_t>(n_layers), false);
  int since_better = 0;
  SelfSpecProgress at;
  bool stop = false;
  for (int step = 1; step < n_layers && since_better < 2 && !stop; ++step) {
    int pick = -1;
    double pick_a = -1;
    at.step = step;
    at.step_scored = 0;
    at.step_candidates = n_layers - step + 1;
    for (int l = n_layers - 1; l >= 0 && !stop; --l) {  // ties go to the later layer
      if (skip[static_cast<size_t>(l)]) continue;
      skip[static_cast<size_t>(l)] = true;
      ctx.SetSkipLayers(skip);
      Result<std::vector<int32_t>> top = TopTokens(ctx, toks);
      ctx.SetSkipLayers({});
      skip[static_cast<size_t>(l)] = false;
      // A set whose logits overflow (NaN or Inf: Corrupt) agrees nowhere; the full model's were finite.
      size_t agree = 0;
      for (size_t i = 0; top.ok() && i < full.size(); ++i) agree += (*top)[i] == full[i];
      const double a = static_cast<double>(agree) / static_cast<double>(full.size());
      if (a > pick_a) pick = l, pick_a = a;
      ++at.step_scored;
      ++at.scored;
      stop = params.progress && !params.progress(at);
    }
    // A step cut short still counts in the first step (something must be chosen), not after it.
    if (stop && step > 1) break;
    skip[static_cast<size_t>(pick)] = true;
    const double c = DraftCost(model, skip);
    const auto [k, speedup] = BestLength(pick_a, c, best.verify_extra, k_max);
    ++since_better;
    if (speedup > best.expected_speedup || best.skip.empty()) {
      since_better = 0;
      best.skip.clear();
      for (int l = 0; l < n_layers; ++l)
        if (skip[static_cast<size_t>(l)]) best.skip.push_back(l);
      best.acceptance = pick_a;
      best.draft_cost = c;
      best.draft_len = k;
      best.expected_speedup = speedup;
    }
    at.best_speedup = best.expected_speedup;
  }
  best.complete = !stop;
  return best;
}

}  // namespace

Result<SelfSpecChoice> SearchSkipSet(Context& ctx, const std::vector<int32_t>& calib, const SelfSpecSearchParams& params) {
  if (ctx.model().config().n_layers < 2) return InvalidArgument("the model has one layer: there is no layer to skip");
  std::vector<int32_t> toks(calib.begin(), calib.begin() + static_cast<long>(std::min<size_t>(
                                                             calib.size(), static_cast<size_t>(std::min(params.max_tokens, ctx.n_ctx())))));
  if (toks.size() < 2) return InvalidArgument("the calibration text has fewer than 2 tokens");
  Result<SelfSpecChoice> r = Search(ctx, toks, params);
  ctx.SetSkipLayers({});
  ctx.Reset();
  return r;
}

Result<std::optional<SelfSpecChoice>> ReadSelfSpecFile(const std::string& path, const ModelIdentity& id, int n_layers) {
  struct stat sb;
  if (::stat(path.c_str(), &sb) != 0) {
    if (errno == ENOENT) return std::optional<SelfSpecChoice>();
    return IoError(path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(sb.st_mode)) return Corrupt(path + ": not a regular file (a saved self-speculative skip set was expected)");
  if (static_cast<uint64_t>(sb.st_size) > kSelfSpecFileLimit)
    return Corrupt(path + ": " + std::to_string(sb.st_size) + " bytes, more than a saved skip set can be (" +
                   std::to_string(kSelfSpecFileLimit) + ")");
  std::string text(static_cast<size_t>(sb.st_size), '\0');
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return IoError(path + ": " + std::strerror(errno));
  const size_t got = std::fread(text.data(), 1, text.size(), f);
  std::fclose(f);
  text.resize(got);
  ED_RETURN_IF_ERROR(CheckJsonDepth(text, path));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& what) { return Corrupt(path + ": " + what + " (delete the file to search again)"); };
  if (j.is_discarded()) return bad("not valid JSON");
  if (!j.is_object() || !j.contains("format") || j["format"] != "edgedecode self-spec")
    return bad("not a saved self-speculative skip set (no \"format\": \"edgedecode self-spec\")");
  if (!j.contains("version") || j["version"] != 1) return bad("unknown \"version\" (1 is read)");
  const nlohmann::json* m = j.contains("model") ? &j["model"] : nullptr;
  if (m == nullptr || !m->is_object() || !m->contains("header_hash") || !(*m)["header_hash"].is_string() ||
      !m->contains("file_size") || !(*m)["file_size"].is_number_unsigned())
    return bad("\"model\" needs \"header_hash\" (a string) and \"file_size\" (a byte count)");
  const std::string hash = (*m)["header_hash"].get<std::string>();
  const uint64_t size = (*m)["file_size"].get<uint64_t>();
  if (hash != id.header_hash || size != id.file_size)
    return Corrupt(path + " was saved for another model: header hash " + hash + ", " + std::to_string(size) +
                   " bytes; this model's header hash is " + id.header_hash + ", " + std::to_string(id.file_size) +
                   " bytes (delete the file to search again)");
  SelfSpecChoice c;
  if (!j.contains("skip") || !j["skip"].is_array()) return bad("\"skip\" must be an array of layer numbers");
  for (size_t i = 0; i < j["skip"].size(); ++i) {
    const nlohmann::json& x = j["skip"][i];
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= n_layers)
      return bad("skip[" + std::to_string(i) + "] is not a layer of this model (0.." + std::to_string(n_layers - 1) + ")");
    c.skip.push_back(x.get<int>());
  }
  std::sort(c.skip.begin(), c.skip.end());
  if (Status st = CheckSkipSet(c.skip, n_layers); !st.ok()) return bad("\"skip\": " + st.message());
  auto number = [&](const char* key, double lo, double hi, double* out) -> Status {
    if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() >= lo) || !(j[key].get<double>() <= hi))
      return bad(std::string("\"") + key + "\" must be a number in " + std::to_string(lo) + ".." + std::to_string(hi));
    *out = j[key].get<double>();
    return Status::Ok();
  };
  ED_RETURN_IF_ERROR(number("acceptance", 0, 1, &c.acceptance));
  ED_RETURN_IF_ERROR(number("draft_cost", 0, 1, &c.draft_cost));
  ED_RETURN_IF_ERROR(number("verify_extra", 0, 1e6, &c.verify_extra));
  ED_RETURN_IF_ERROR(number("expected_speedup", 0, 1e6, &c.expected_speedup));
  double len = 0, tokens = 0;
  ED_RETURN_IF_ERROR(number("draft_len", 0, 64, &len));
  ED_RETURN_IF_ERROR(number("calibration_tokens", 0, 1 << 20, &tokens));
  c.draft_len = static_cast<int>(len);
  c.calibration_tokens = static_cast<int>(tokens);
  if (j.contains("calibration") && j["calibration"].is_string()) c.calibration = j["calibration"].get<std::string>();
  return std::optional<SelfSpecChoice>(std::move(c));
}

Status WriteSelfSpecFile(const std::string& path, const SelfSpecChoice& c, const ModelIdentity& id, int n_layers) {
  const nlohmann::ordered_json j = {
      {"format", "edgedecode self-spec"},
      {"version", 1},
      {"model", {{"header_hash", id.header_hash}, {"file_size", id.file_size}, {"n_layers", n_layers}}},
      {"skip", c.skip},
      {"skip_text", FormatSkipLayers(c.skip)},
      {"acceptance", c.acceptance},
      {"draft_cost", c.draft_cost},
      {"verify_extra", c.verify_extra},
      {"draft_len", c.draft_len},
      {"expected_speedup", c.expected_speedup},
      {"calibration", c.calibration},
      {"calibration_tokens", c.calibration_tokens}};
  const std::string text = j.dump(2) + "\n";
  const std::string tmp = TempPathFor(path);
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return IoError("cannot write " + tmp + ": " + std::strerror(errno));
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int err = errno;
  if (std::fclose(f) != 0 || !wrote) {
    std::remove(tmp.c_str());
    return IoError("cannot write " + tmp + ": " + std::strerror(wrote ? errno : err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    return IoError("cannot rename " + tmp + " to " + path + ": " + std::strerror(e));
  }
  return Status::Ok();
}

}  // namespace edgedecode::llm
