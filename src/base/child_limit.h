// Test helper: runs a function in a child process under an address-space limit (RLIMIT_AS) and an alarm, so
// that a test can show an input cannot make the code allocate or loop without bound: with the limit, an
// unbounded allocation fails (bad_alloc, a crash) instead of succeeding on a big machine, and a hang ends
// as SIGALRM. A crash, an escaped exception or a hang is a failed child, never a dead test binary. Under
// AddressSanitizer the limit cannot be set (its shadow memory alone reserves terabytes of address space),
// so the function then runs without it, MemoryLimitApplies() says so, and the caller still checks what the
// function returned. The one implementation for every module's tests.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>

namespace edgedecode::testing_util {

inline constexpr uint64_t kTestMemoryLimit = uint64_t{1} << 30;  // 1 GiB

// True where RLIMIT_AS can be applied (not under ASan); prints a note, once, where it cannot.
inline bool MemoryLimitApplies() {
#if defined(__SANITIZE_ADDRESS__)
  constexpr bool asan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  constexpr bool asan = true;
#else
  constexpr bool asan = false;
#endif
#else
  constexpr bool asan = false;
#endif
  if (asan) {
    static bool said = false;
    if (!said) std::printf("note: built with AddressSanitizer: RLIMIT_AS is not applied (the other assertions run)\n");
    said = true;
  }
  return !asan;
}

struct ChildResult {
  bool exited = false;  // false: killed by a signal (a crash, or the alarm)
  int code = -1;        // exit code, or the signal number
  std::string out;      // what the function wrote to *out
  bool ok() const { return exited && code == 0; }
  // "exit 0", "signal 11", "signal 14 (hang guard)", ...
  std::string how() const {
    return exited ? "exit " + std::to_string(code)
                  : "signal " + std::to_string(code) + (code == SIGALRM ? " (hang guard)" : "");
  }
};

// Runs fn(&out) in a child under RLIMIT_AS = limit bytes (where it applies) and an alarm of alarm_s seconds;
// fn's return value is the child's exit code (3 when an exception escapes it) and out comes back through a pipe.
inline ChildResult RunInChild(const std::function<int(std::string* out)>& fn, uint64_t limit = kTestMemoryLimit,
                              unsigned alarm_s = 300) {
  const bool apply = MemoryLimitApplies();
  std::fflush(nullptr);
  int p[2];
  if (::pipe(p) != 0) return {};
  const pid_t pid = ::fork();
  if (pid < 0) return {};
  if (pid == 0) {
    ::close(p[0]);
    if (apply) {
      rlimit rl{limit, limit};
      ::setrlimit(RLIMIT_AS, &rl);
    }
    ::alarm(alarm_s);
    std::string out;
    int rc = 0;
    try {
      rc = fn(&out);
    } catch (const std::exception& e) {
      out = std::string("exception escaped: ") + e.what();
      rc = 3;
    }
    for (size_t done = 0; done < out.size();) {
      const ssize_t w = ::write(p[1], out.data() + done, out.size() - done);
      if (w <= 0) break;
      done += static_cast<size_t>(w);
    }
    std::fflush(nullptr);
    ::_exit(rc);
  }
  ::close(p[1]);
  ChildResult r;
  char buf[4096];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) r.out.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return r;
  r.exited = WIFEXITED(status);
  r.code = r.exited ? WEXITSTATUS(status) : WTERMSIG(status);
  return r;
}

// fn's return value becomes the child's exit code; a crash gives 128 + the signal number.
inline int RunWithMemoryLimit(const std::function<int()>& fn, uint64_t limit = kTestMemoryLimit) {
  const ChildResult r = RunInChild([&](std::string*) { return fn(); }, limit);
  return r.exited ? r.code : 128 + r.code;
}

// The shell prefix that puts a command run through sh under the same limit ("" under ASan).
inline const char* ShellMemoryLimit() { return MemoryLimitApplies() ? "ulimit -v 1048576;" : ""; }

}  // namespace edgedecode::testing_util
