#include "cli/doctor_data.h"

#include <cstdio>
#include <filesystem>

#include "cli/common.h"
#include "cli/output_file.h"
#include "cli/signals.h"

namespace edgedecode::cli {
namespace fs = std::filesystem;

Status CheckOutsideTree(const std::string& what, const std::string& out, const std::string& root, bool is_dir) {
  std::error_code ec;
  if (is_dir && fs::is_symlink(fs::symlink_status(out, ec)))
    return InvalidArgument(what + " " + out + " is a symlink; fixed copies are never written through one");
  const fs::path o = fs::weakly_canonical(fs::absolute(out, ec), ec);
  const fs::path r = fs::weakly_canonical(fs::absolute(root, ec), ec);
  auto inside = [](const fs::path& a, const fs::path& b) {  // a == b or a below b, component-wise
    auto ai = a.begin(), bi = b.begin();
    for (; bi != b.end() && !bi->empty(); ++ai, ++bi)
      if (ai == a.end() || *ai != *bi) return false;
    return true;
  };
  if (inside(o, r))
    return InvalidArgument(what + " " + out + " is inside the input tree " + root + " (" + o.string() +
                           "); the input is never modified: choose a place outside it");
  if (inside(r, o))
    return InvalidArgument(what + " " + out + " contains the input tree " + root + "; choose a folder outside it");
  return Status::Ok();
}

namespace {

void PrintReport(FILE* out, const doctor::DataReport& rep, const doctor::DataSummary& sum) {
  std::fprintf(out, "doctor data: %s: %zu files, %zu with findings (%.2f s, %d threads)%s\n\n", EscapeForTerminal(rep.root).c_str(),
               rep.files.size(), rep.FilesWithFindings(), rep.seconds, rep.jobs,
               rep.interrupted ? (", interrupted: " + std::to_string(rep.files_found - rep.files.size()) + " not checked").c_str() : "");
  std::fprintf(out, "  %-10s %7s %7s %9s\n", "format", "files", "clean", "findings");
  for (auto& [fmt, c] : sum.files_and_flagged)
    std::fprintf(out, "  %-10s %7d %7d %9d\n", fmt.c_str(), c.first, c.first - c.second, c.second);
  if (!sum.by_finding.empty()) {
    std::fprintf(out, "\n  %-26s %7s\n", "finding", "count");
    for (auto& [code, c] : sum.by_finding) std::fprintf(out, "  %-26s %7d\n", code.c_str(), c);
  }
  bool header = false;
  for (const auto& f : rep.files) {
    for (const auto& x : f.findings) {
      if (!header) {
        std::fprintf(out, "\nfindings:\n");
        header = true;
      }
      // Names and messages may hold any bytes (a Latin-1 file name): printed as \xNN where not UTF-8.
      std::fprintf(out, "  %s: %s [%s]: %s", EscapeForTerminal(x.path).c_str(), doctor::FindingCodeName(x.code),
                   doctor::SeverityName(x.severity), EscapeForTerminal(x.message).c_str());
      if (x.line >= 0) std::fprintf(out, " (line %lld, column %lld)", static_cast<long long>(x.line), static_cast<long long>(x.column));
      if (x.offset >= 0) std::fprintf(out, " at byte %lld", static_cast<long long>(x.offset));
      std::fprintf(out, "\n");
      if (!x.fix.empty()) std::fprintf(out, "      fix: %s\n", EscapeForTerminal(x.fix).c_str());
    }
  }
}

}  // namespace

int RunDoctorData(DoctorDataCommand cmd) {
  const std::string name = "edgedecode doctor data";
  doctor::DataOptions& opt = cmd.opt;
  if (cmd.fix && cmd.out_dir.empty()) return Fail(name, InvalidArgument("--fix needs --out DIR (the input tree is never modified)"));
  if (!cmd.out_dir.empty()) {
    if (Status st = CheckOutsideTree("--out", cmd.out_dir, opt.root, true); !st.ok()) return Fail(name, st);
    opt.keep_text = true;
  }
  if (!cmd.json_path.empty() && cmd.json_path != "-") {
    if (Status st = CheckOutsideTree("--json", cmd.json_path, opt.root, false); !st.ok()) return Fail(name, st);
  }
  if (!cmd.manifest_path.empty()) {
    if (Status st = CheckOutsideTree("--manifest", cmd.manifest_path, opt.root, false); !st.ok()) return Fail(name, st);
  }
  if (!cmd.manifest_path.empty() || !cmd.verify_path.empty()) opt.hash = true;
  InterruptScope interrupt;
  Progress progress(cmd.progress);
  opt.stop = [] { return InterruptScope::requested(); };
  opt.on_progress = [&](size_t done, size_t total) {
    progress.Update("doctor: checked " + std::to_string(done) + "/" + std::to_string(total) + " files");
  };
  auto res = doctor::CheckTree(opt);
  progress.Done();
  if (!res.ok()) return Fail(name, res.status());
  doctor::DataReport& rep = res.value();
  if (!cmd.verify_path.empty() && !rep.interrupted) {
    if (Status st = doctor::VerifyAgainst(cmd.verify_path, &rep); !st.ok()) return Fail(name, st);
  }
  // Fixes first: a refused fix is a finding, and findings are printed and counted below.
  std::vector<std::string> fix_log;
  if (cmd.fix && !rep.interrupted) {
    fix_log = doctor::WriteFixes(rep, cmd.out_dir);
    std::string text;
    for (auto& l : fix_log) text += l + "\n";
    if (Status st = WriteFileAtomically((fs::path(cmd.out_dir) / "doctor-fixes.log").string(), text); !st.ok())
      return Fail(name, st);
  }
  const doctor::DataSummary sum = doctor::Summarize(rep);
  FILE* out = cmd.json_path == "-" ? stderr : stdout;
  PrintReport(out, rep, sum);
  if (!cmd.json_path.empty()) {
    nlohmann::json j = doctor::DataReportJson(rep, sum);
    StampJson(j, "doctor data");
    const std::string text = DumpJson(j, 2) + "\n";
    if (cmd.json_path == "-") std::fputs(text.c_str(), stdout);
    else if (Status st = WriteFileAtomically(cmd.json_path, text); !st.ok()) return Fail(name, st);
  }
  if (!cmd.manifest_path.empty() && !rep.interrupted) {
    nlohmann::json mj = nlohmann::json::array();
    for (const auto& f : rep.files)
      if (!f.sha256.empty()) mj.push_back({{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}});
    Status st = WriteFileAtomically(cmd.manifest_path, doctor::ManifestText(rep));
    if (st.ok()) st = WriteFileAtomically(cmd.manifest_path + ".json", DumpJson(mj, 2) + "\n");
    if (!st.ok()) return Fail(name, st);
    std::fprintf(out, "\nmanifest: %s (sha256sum -c compatible, run from %s) and %s.json\n", cmd.manifest_path.c_str(),
                 rep.root.c_str(), cmd.manifest_path.c_str());
  }
  if (cmd.fix && !rep.interrupted)
    std::fprintf(out, "\nfix: %zu log line(s) for files written to %s; log in %s/doctor-fixes.log (originals untouched)\n",
                 fix_log.size(), cmd.out_dir.c_str(), cmd.out_dir.c_str());
  if (rep.interrupted) {
    std::fprintf(stderr, "doctor data: interrupted; the report covers the %zu files checked (no manifest or fixes written)\n",
                 rep.files.size());
    return ToInt(InterruptScope::exit_code());
  }
  for (const auto& f : rep.files)
    for (const auto& x : f.findings)
      if (x.severity != doctor::Severity::kInfo) return 1;
  return 0;
}

}  // namespace edgedecode::cli
