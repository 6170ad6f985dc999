// Runs the built edgedecode binary from tests and captures what it prints.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace edgedecode::test {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/edgedecode_test_" + std::to_string(::getpid()) + "_" + name;
}

// args are passed through the shell: quote them yourself.
// env: optional "NAME=value ..." prefix for the command.
inline CommandResult RunEdgedecode(const std::string& args, const std::string& env = "") {
  const std::string err_path = TempPath("stderr.txt");
  const std::string cmd = env + (env.empty() ? "" : " ") + std::string(EDGEDECODE_BINARY) + " " + args + " 2>>" + err_path;
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 65536> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = ReadFile(err_path);
  std::remove(err_path.c_str());
  return r;
}

}  // namespace edgedecode::test
