// Test helper: runs a function in a child process under an address-space limit (RLIMIT_AS), so that a test can
// show an input cannot make the code allocate without bound: with the limit, an unbounded allocation fails
// (bad_alloc, a crash) instead of succeeding on a big machine. Under AddressSanitizer the limit cannot be set
// (ASan reserves terabytes of shadow address space), so the function then runs without it and
// MemoryLimitApplies() says so; the caller still checks what the function returned.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>

namespace edgedecode::testing_util {

inline constexpr uint64_t kTestMemoryLimit = uint64_t{1} << 30;  // 1 GiB

inline bool MemoryLimitApplies() {
#if defined(__SANITIZE_ADDRESS__)
  return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return false;
#else
  return true;
#endif
#else
  return true;
#endif
}

// fn's return value becomes the child's exit code; a crash gives 128 + the signal number.
inline int RunWithMemoryLimit(const std::function<int()>& fn, uint64_t limit = kTestMemoryLimit) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (MemoryLimitApplies()) {
      rlimit rl{limit, limit};
      ::setrlimit(RLIMIT_AS, &rl);
    } else {
      std::fprintf(stderr, "[memory limit] not applied under AddressSanitizer; checking the result only\n");
    }
    const int rc = fn();
    std::fflush(nullptr);
    ::_exit(rc);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The shell prefix that puts a command run through sh under the same limit ("" under ASan).
inline const char* ShellMemoryLimit() { return MemoryLimitApplies() ? "ulimit -v 1048576;" : ""; }

}  // namespace edgedecode::testing_util
