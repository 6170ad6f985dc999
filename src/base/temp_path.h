// The temporary name a file is written under before it is renamed into place: beside the target (so the
// rename is atomic), unique per process. The CLI's signal handler removes it on SIGINT / SIGTERM.
#pragma once

#include <unistd.h>

#include <string>

namespace edgedecode {

inline std::string TempPathFor(const std::string& path) { return path + ".tmp-" + std::to_string(::getpid()); }

}  // namespace edgedecode
