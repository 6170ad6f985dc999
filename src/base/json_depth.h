// Bounds how deeply JSON text nests before a parser sees it. nlohmann::json copies, compares and dumps
// values recursively (and its callback parser recurses), so a file of a million '[' would exhaust the
// stack; every reader of untrusted JSON calls this first (profiles, plans, configs, request bodies).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "edgedecode/status.h"

namespace edgedecode {

// Nesting depth a JSON document may reach: far above any real config or profile.
inline constexpr size_t kMaxJsonDepth = 256;

// kCorrupt "WHERE:LINE:COL: JSON nested deeper than N levels" when an array or object opens past
// `max_depth`; OK otherwise (the text is not otherwise validated: the parser does that). Linear, no
// recursion, strings and their escapes skipped.
Status CheckJsonDepth(std::string_view text, const std::string& where, size_t max_depth = kMaxJsonDepth);

}  // namespace edgedecode
