#include "cli/common.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>

#include "cli/output_file.h"

namespace edgedecode::cli {
namespace fs = std::filesystem;

namespace {


}  // namespace


int Fail(const std::string& command, const Status& st) {
  // Messages quote names and strings read from files: shown escaped, so bytes that are not UTF-8 or are
  // terminal controls cannot garble or drive the terminal.
  std::fprintf(stderr, "%s: %s\n", command.c_str(), EscapeForTerminal(st.message()).c_str());
  return ToInt(ExitCodeFor(st.code()));
}

namespace {

// llama.cpp flags with no edgedecode equivalent, and what to do instead.
struct ForeignFlag {
  const char* names;  // '|'-separated spellings
  const char* advice;
};
const ForeignFlag kForeignFlags[] = {
    {"-ngl|--n-gpu-layers|--gpu-layers|-sm|--split-mode|-mg|--main-gpu|-ts|--tensor-split|-dev|--device",
     "edgedecode runs on the CPU; there are no GPU layers or devices to choose: drop the flag"},
    {"-cnv|--conversation|-i|--interactive|-if|--interactive-first|-ins|--instruct",
     "for an interactive conversation use `edgedecode chat -m MODEL`"},
    {"-fa|--flash-attn",
     "attention is always one fused pass over the KV cache; --attn-f16 gives llama.cpp's flash-attention arithmetic"},
    {"--mlock|--no-mmap|--numa", "edgedecode maps the model read-only and copies the streamed matrices to huge pages; "
                                 "--no-repack keeps them in the file mapping"},
};

bool IsForeign(const std::string& arg, const char** advice) {
  const std::string name = arg.substr(0, arg.find('='));
  for (const ForeignFlag& f : kForeignFlags) {
    std::string names = f.names;
    size_t i = 0;
    while (i <= names.size()) {
      size_t j = names.find('|', i);
      if (j == std::string::npos) j = names.size();
      if (names.compare(i, j - i, name) == 0) {
        *advice = f.advice;
        return true;
      }
      i = j + 1;
    }
  }
  return false;
}

// The option `arg` names in app (or its chosen subcommand), if any: "--name", "--name=v", "-x".
CLI::Option* FindOption(CLI::App* app, const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-') return nullptr;
  std::string name = arg.substr(0, arg.find('='));
  if (name.size() > 2 && name[1] != '-') name = name.substr(0, 2);  // -t2: short option with a value attached
  return app->get_option_no_throw(name);
}

bool LooksLikeFlag(CLI::App* app, const std::string& arg) {
  if (arg.size() > 2 && arg[0] == '-' && arg[1] == '-') return true;
  return arg.size() == 2 && arg[0] == '-' && std::isalpha(static_cast<unsigned char>(arg[1])) && FindOption(app, arg);
}

// Checks what CLI11 lets through: a value-taking option given a flag as its value, llama.cpp-only flags,
// unknown subcommands. Returns an error message or "".
std::string CheckArgs(CLI::App& root, std::vector<std::string>& args) {
  CLI::App* app = &root;
  const auto subs = root.get_subcommands([](CLI::App*) { return true; });
  bool seen_positional = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a == "--") break;
    if (a == "-ctk" || a == "-ctv") a = "-" + a;  // llama.cpp's spelling of --ctk / --ctv
    const char* advice = nullptr;
    if (IsForeign(a, &advice) && !app->get_option_no_throw(a.substr(0, a.find('='))))
      return "'" + a + "' is a llama.cpp option edgedecode does not have: " + advice;
    if (!subs.empty() && app == &root && !a.empty() && a[0] != '-' && !seen_positional) {
      CLI::App* sub = nullptr;
      for (CLI::App* s : subs)
        if (s->get_name() == a) sub = s;
      if (sub == nullptr) {
        std::string names;
        for (CLI::App* s : subs) names += (names.empty() ? "" : ", ") + s->get_name();
        return "unknown subcommand '" + a + "' (subcommands: " + names + ")";
      }
      app = sub;
      continue;
    }
    CLI::Option* opt = FindOption(app, a);
    if (opt == nullptr && a.rfind("-t", 0) == 0 && a.rfind("--", 0) != 0 && app->get_option_no_throw("--target"))
      return "-t is the thread count in edgedecode; name the device with --target NAME|FILE (or -T)";
    if (opt == nullptr) {
      if (!a.empty() && a[0] != '-') seen_positional = true;
      continue;
    }
    const bool value_attached = a.find('=') != std::string::npos || (a.size() > 2 && a[1] != '-');
    if (value_attached || opt->get_expected_min() < 1) continue;
    if (i + 1 < args.size() && LooksLikeFlag(app, args[i + 1])) {
      const std::string spelled = opt->get_lnames().empty() ? a : "--" + opt->get_lnames()[0];
      return "option " + a + " needs a value but is followed by the flag '" + args[i + 1] + "' (write " + spelled +
             "=VALUE if " + args[i + 1] + " really is the value)";
    }
    ++i;  // the value
  }
  return "";
}

}  // namespace

std::optional<int> Parse(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const std::string problem = CheckArgs(app, args);
  if (!problem.empty()) {
    std::fprintf(stderr, "%s: %s\n", app.get_name().c_str(), problem.c_str());
    return ToInt(ExitCode::kUsage);
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return ToInt(ExitCode::kOk);
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return ToInt(ExitCode::kOk);
  } catch (const CLI::ParseError& e) {
    std::string hint;
    if (const CLI::Option* j = app.get_option_no_throw("--json"); j && j->count() && !j->results().empty() &&
                                                                    !j->results()[0].empty() && j->results()[0] != "-")
      hint = " (--json took '" + j->results()[0] + "' as its output file: write --json=FILE, or put --json last)";
    std::fprintf(stderr, "%s: %s%s\nrun '%s --help' for the options\n", app.get_name().c_str(), e.what(), hint.c_str(),
                 app.get_name().c_str());
    return ToInt(ExitCode::kUsage);
  }
  return std::nullopt;
}

void JsonOutput::Add(CLI::App& app, const std::string& what) {
  opt_ = app.add_option("--json", path_, what + " as JSON to FILE (no FILE or '-': stdout, the text report then on stderr)")
             ->expected(0, 1)
             ->type_name("[FILE]");
}

std::string DumpJson(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void StampJson(nlohmann::json& j, const std::string& command) {
  j["schema_version"] = kJsonSchemaVersion;
  j["command"] = command;
}

Status JsonOutput::Write(nlohmann::json j, const std::string& command, const std::vector<std::string>& inputs) const {
  if (!on()) return Status::Ok();
  StampJson(j, command);
  const std::string text = DumpJson(j) + "\n";
  if (to_stdout()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return Status::Ok();
  }
  ED_RETURN_IF_ERROR(CheckOutputIsNotInput(path_, inputs, "--json"));
  return WriteFileAtomically(path_, text);
}

Progress::Progress(bool enabled) : enabled_(enabled), tty_(::isatty(STDERR_FILENO) == 1) {}
Progress::~Progress() { Done(); }

void Progress::Update(const std::string& line) {
  if (!enabled_) return;
  const auto now = Clock::now();
  if (tty_) {
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
    open_ = true;
  } else if (last_ == Clock::time_point{} || Seconds(last_, now) >= 1.0) {
    std::fprintf(stderr, "%s\n", line.c_str());
    last_ = now;
  }
  std::fflush(stderr);
}

void Progress::Done() {
  if (open_) std::fputc('\n', stderr);
  open_ = false;
}

void AddNoProgress(CLI::App& app, bool* no_progress) {
  app.add_flag("--no-progress", *no_progress, "no progress lines on stderr");
}

Result<std::string> ReadInputText(const std::string& path, uint64_t max_bytes) {
  std::string text;
  char buf[65536];
  if (path == "-") {
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) {
      text.append(buf, n);
      if (text.size() > max_bytes) return Corrupt("stdin: more than " + std::to_string(max_bytes) + " bytes");
    }
    return text;
  }
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return NotFound(path + ": no such file");
  if (fs::is_directory(st)) return NotFound(path + ": is a folder, not a text file");
  if (!fs::is_regular_file(st)) return NotFound(path + ": not a regular file (a FIFO or a device is not read)");
  const uint64_t size = fs::file_size(path, ec);
  if (!ec && size > max_bytes) return Corrupt(path + ": " + std::to_string(size) + " bytes, more than the limit of " + std::to_string(max_bytes));
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return NotFound(path + ": cannot open: " + std::strerror(errno));
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && text.size() <= max_bytes) text.append(buf, n);
  const bool err = std::ferror(f) != 0;
  std::fclose(f);
  if (err) return IoError(path + ": read failed");
  return text;
}

Result<std::string> ResolveTarget(const std::string& arg) {
  if (arg.empty()) return InvalidArgument("--target needs a NAME or a FILE.json");
  std::error_code ec;
  if (arg.find('/') != std::string::npos || (arg.size() > 5 && arg.substr(arg.size() - 5) == ".json")) {
    if (!fs::is_regular_file(arg, ec)) return NotFound("--target " + arg + ": no such profile file");
    return arg;
  }
  std::vector<fs::path> dirs;
  if (const char* e = std::getenv("EDGEDECODE_TARGETS")) {
    std::string s = e;
    size_t i = 0;
    while (i <= s.size()) {
      size_t j = s.find(':', i);
      if (j == std::string::npos) j = s.size();
      if (j > i) dirs.emplace_back(s.substr(i, j - i));
      i = j + 1;
    }
  }
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path() / "targets");
    dirs.push_back(exe.parent_path().parent_path() / "targets");
    dirs.push_back(exe.parent_path().parent_path() / "share/edgedecode/targets");
  }
#ifdef EDGEDECODE_SOURCE_TARGETS
  dirs.emplace_back(EDGEDECODE_SOURCE_TARGETS);
#endif
  std::vector<std::string> known;
  for (const fs::path& d : dirs) {
    if (fs::is_regular_file(d / (arg + ".json"), ec)) return (d / (arg + ".json")).string();
    for (const auto& e : fs::directory_iterator(d, ec))
      if (e.path().extension() == ".json") known.push_back(e.path().stem().string());
  }
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  return InvalidArgument("--target " + arg + ": no such profile (known: " + (list.empty() ? "none found" : list) +
                         "; or give a FILE.json)");
}

}  // namespace edgedecode::cli
