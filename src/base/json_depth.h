// A bound on the nesting depth of JSON text, checked before it is parsed. nlohmann::json's parser keeps its
// own stack, but destroying, copying, dumping and walking the result recurse once per level, so a document
// nested a million deep (a few MB of '[') overflows the thread's stack. The scan honours strings and their
// escapes; it does not validate anything else (the parser does). Header-only, pure, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "edgedecode/status.h"

namespace edgedecode {

// Deep enough for any real configuration or profile; far below what exhausts an 8 MiB stack.
inline constexpr size_t kMaxJsonDepth = 64;

// The byte offset at which text first nests deeper than max_depth arrays and objects, or npos.
inline size_t JsonTooDeepAt(std::string_view text, size_t max_depth = kMaxJsonDepth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character (a quote included) is not special
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

// InvalidArgument "<source>: offset N: JSON nested deeper than M levels" when it is; Ok otherwise.
inline Status CheckJsonDepth(std::string_view text, const std::string& source, size_t max_depth = kMaxJsonDepth) {
  const size_t at = JsonTooDeepAt(text, max_depth);
  if (at == std::string_view::npos) return Status::Ok();
  return InvalidArgument(source + ": offset " + std::to_string(at) + ": JSON nested deeper than " +
                         std::to_string(max_depth) + " levels of arrays and objects");
}

}  // namespace edgedecode
