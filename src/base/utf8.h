// Making text from files safe to print or write: names inside a model or profile (op types, tensor names)
// are arbitrary bytes, but the reports are UTF-8 and may go to a terminal.
#pragma once

#include <string>
#include <string_view>

namespace edgedecode {

// Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF); each invalid byte becomes U+FFFD,
// the same replacement the CLI's JSON writer makes.
std::string ToValidUtf8(std::string_view s);

// ToValidUtf8, and C0 control characters other than '\n' and '\t' (and DEL) written as "\xNN", so
// that a name cannot move the cursor or change a terminal's state.
std::string ToPrintable(std::string_view s);

}  // namespace edgedecode
