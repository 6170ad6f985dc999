#include "cli/signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace edgedecode::cli {
namespace {

std::atomic<int> g_signal{0};
char g_temp_file[4096];  // read by the handler: a fixed buffer, no allocation there

void RemoveTempAndExit(int sig) {
  if (g_temp_file[0] != '\0') ::unlink(g_temp_file);
  ::_exit(128 + sig);
}

void OnSignal(int sig) {
  if (g_signal.exchange(sig) != 0) RemoveTempAndExit(sig);  // the second one
}

void SetTempFile(const std::string& path) {
  const size_t n = std::min(path.size(), sizeof g_temp_file - 1);
  std::memcpy(g_temp_file, path.data(), n);
  g_temp_file[n] = '\0';
}

void Install(void (*handler)(int)) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace

InterruptScope::InterruptScope(const std::string& temp_file) {
  SetTempFile(temp_file);
  g_signal = 0;
  Install(OnSignal);
}

InterruptScope::~InterruptScope() {
  Install(SIG_DFL);
  g_temp_file[0] = '\0';
}

int InterruptScope::signal() { return g_signal.load(); }

void InterruptScope::Clear() { g_signal = 0; }

ExitCode InterruptScope::exit_code() { return signal() == SIGTERM ? ExitCode::kTerminated : ExitCode::kInterrupted; }

void ExitOnSignalRemoving(const std::string& temp_file) {
  SetTempFile(temp_file);
  Install(RemoveTempAndExit);
}

}  // namespace edgedecode::cli
