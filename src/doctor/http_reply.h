// A registry reply saved as an HTTP transcript (`curl -i`, `curl -iL`, a proxy log): the sequence of
// responses an HTTP client read, split the way the client reads them. Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edgedecode::doctor {

struct HttpResponse {
  std::string version;  // "HTTP/1.1", "HTTP/2"
  int status = 0;
  std::string reason;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, values trimmed
  std::string body;
  // First value of a header (name lower-case), "" if absent.
  std::string Header(std::string_view name) const;
};

// Every response in the transcript, in order. A transcript that does not start with a status line
// is one response with status 0 whose body is the whole text (a body saved alone). Interim 1xx
// responses and redirects followed by curl -L appear as their own entries; a response's body ends at
// its Content-Length, or for 1xx / 3xx without one at the next status line.
std::vector<HttpResponse> ParseHttpTranscript(std::string_view raw);

// An auth challenge (WWW-Authenticate) in words: scheme and the realm / service / scope parameters.
struct AuthChallenge {
  std::string scheme;  // "Bearer", "Basic", ...
  std::string realm, service, scope, error;
};
AuthChallenge ParseAuthChallenge(std::string_view header);

}  // namespace edgedecode::doctor
