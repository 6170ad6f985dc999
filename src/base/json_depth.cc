#include "base/json_depth.h"

namespace edgedecode {

Status CheckJsonDepth(std::string_view text, const std::string& where, size_t max_depth) {
  size_t depth = 0, line = 1, col = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    ++col;
    if (c == '\n') { ++line; col = 0; }
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        return Corrupt(where + ":" + std::to_string(line) + ":" + std::to_string(col) + ": JSON nested deeper than " +
                       std::to_string(max_depth) + " levels (refused before parsing)");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return Status::Ok();
}

}  // namespace edgedecode
