// Making text from files safe to print or write: names inside a model, profile or dataset (op types, tensor
// names, file names, HTTP headers) are arbitrary bytes, but the reports are UTF-8 and may go to a terminal.
// Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace edgedecode {

// Length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlongs, surrogates or code points past
// U+10FFFF), 0 when the byte there does not start one.
size_t Utf8SequenceAt(std::string_view s, size_t i);

// Each invalid byte becomes U+FFFD, the same replacement the CLI's JSON writer makes (for files: CSV).
std::string ToValidUtf8(std::string_view s);

// For a terminal: valid UTF-8 is kept; every invalid byte and every control character (C0 including tab
// and newline, DEL, C1) is written as "\xNN", so that a name can neither move the cursor nor hide its real
// bytes, and a report line stays one line.
std::string EscapeForTerminal(std::string_view s);

}  // namespace edgedecode
