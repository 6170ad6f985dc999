// Test helper: runs a check in a child process under RLIMIT_AS, with SIGALRM as a guard against a hang,
// and hands back what it returned. A crash, an escaped exception or a hang is a failed child, never a
// dead test binary. Under AddressSanitizer the address-space limit cannot work (the shadow memory
// reserves terabytes): the child then runs without it and the test says so; every other assertion stays.
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

#if defined(__SANITIZE_ADDRESS__)
#define EDGEDECODE_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EDGEDECODE_TEST_ASAN 1
#endif
#endif

namespace edgedecode::doctor::testing {

inline constexpr uint64_t kTestAddressSpace = uint64_t{1} << 30;  // 1 GiB, as the Release rule says

struct ChildResult {
  bool ok = false;       // exited with status 0
  std::string out;       // what fn returned
  std::string how;       // "exit 0", "signal 11", "signal 14 (hang guard)", ...
};

// True where RLIMIT_AS is applied (not under ASan); prints a note where it is not.
inline bool AddressSpaceLimitApplies() {
#ifdef EDGEDECODE_TEST_ASAN
  static bool said = false;
  if (!said) std::printf("note: built with AddressSanitizer: RLIMIT_AS is not applied (the other assertions run)\n");
  said = true;
  return false;
#else
  return true;
#endif
}

inline ChildResult RunBounded(const std::function<std::string()>& fn, uint64_t address_space = kTestAddressSpace,
                              unsigned hang_guard_s = 300) {
  const bool limit = AddressSpaceLimitApplies();
  std::fflush(stdout);
  int p[2];
  if (pipe(p) != 0) return {false, "", "pipe failed"};
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    if (limit) {
      rlimit rl{address_space, address_space};
      setrlimit(RLIMIT_AS, &rl);
    }
    alarm(hang_guard_s);
    std::string s;
    int rc = 0;
    try {
      s = fn();
    } catch (const std::exception& e) {
      s = std::string("exception escaped: ") + e.what();
      rc = 3;
    }
    for (size_t done = 0; done < s.size();) {
      const ssize_t w = write(p[1], s.data() + done, s.size() - done);
      if (w <= 0) break;
      done += static_cast<size_t>(w);
    }
    _exit(rc);
  }
  close(p[1]);
  ChildResult r;
  char buf[4096];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) r.out.append(buf, static_cast<size_t>(n));
  close(p[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFEXITED(st)) {
    r.ok = WEXITSTATUS(st) == 0;
    r.how = "exit " + std::to_string(WEXITSTATUS(st));
  } else if (WIFSIGNALED(st)) {
    r.how = "signal " + std::to_string(WTERMSIG(st)) + (WTERMSIG(st) == SIGALRM ? " (hang guard)" : "");
  }
  return r;
}

}  // namespace edgedecode::doctor::testing
