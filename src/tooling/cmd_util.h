// Exit-code mapping shared by the tooling subcommands (same as the rest of the CLI: 2 usage,
// 3 bad or missing input, 1 other failures).
#pragma once

#include <cstdio>

#include "edgedecode/status.h"

namespace edgedecode::tooling {

inline int Fail(const char* cmd, const Status& st) {
  std::fprintf(stderr, "edgedecode %s: %s\n", cmd, st.message().c_str());
  switch (st.code()) {
    case StatusCode::kInvalidArgument: return 2;
    case StatusCode::kCorrupt: case StatusCode::kNotFound: case StatusCode::kIoError: case StatusCode::kUnsupported:
      return 3;
    default: return 1;
  }
}

}  // namespace edgedecode::tooling
