#include "doctor/http_reply.h"

#include <cctype>
#include <cstdlib>

namespace edgedecode::doctor {
namespace {

std::string Lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool StatusLineAt(std::string_view raw, size_t pos) { return raw.compare(pos, 5, "HTTP/") == 0; }

// The next status line at a line start after `from`, or npos.
size_t NextStatusLine(std::string_view raw, size_t from) {
  for (size_t p = from; p < raw.size(); ++p) {
    p = raw.find("HTTP/", p);
    if (p == std::string_view::npos) return p;
    if (p == 0 || raw[p - 1] == '\n') return p;
  }
  return std::string_view::npos;
}

}  // namespace

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k == name) return v;
  return "";
}

std::vector<HttpResponse> ParseHttpTranscript(std::string_view raw) {
  std::vector<HttpResponse> out;
  size_t pos = 0;
  // curl -v style leading blank lines are not part of the reply.
  while (pos < raw.size() && (raw[pos] == '\r' || raw[pos] == '\n')) ++pos;
  if (!StatusLineAt(raw, pos)) {
    HttpResponse r;
    r.body = std::string(raw);
    out.push_back(std::move(r));
    return out;
  }
  while (pos < raw.size() && StatusLineAt(raw, pos)) {
    HttpResponse r;
    size_t eol = raw.find('\n', pos);
    std::string_view status_line = Trim(raw.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos));
    size_t sp = status_line.find(' ');
    r.version = std::string(status_line.substr(0, sp));
    if (sp != std::string_view::npos) {
      r.status = std::atoi(std::string(status_line.substr(sp + 1, 3)).c_str());
      if (status_line.size() > sp + 5) r.reason = std::string(status_line.substr(sp + 5));
    }
    pos = eol == std::string_view::npos ? raw.size() : eol + 1;
    // Headers up to the blank line (CRLF or LF).
    while (pos < raw.size()) {
      eol = raw.find('\n', pos);
      std::string_view line = raw.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
      pos = eol == std::string_view::npos ? raw.size() : eol + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) break;
      size_t c = line.find(':');
      if (c == std::string_view::npos) continue;
      r.headers.emplace_back(Lower(Trim(line.substr(0, c))), std::string(Trim(line.substr(c + 1))));
    }
    // The body: Content-Length when given; a 1xx has none; a redirect or 1xx ends at the next
    // status line (curl -iL writes the followed response right after); a final reply runs to the end.
    size_t end = raw.size();
    const std::string cl = r.Header("content-length");
    const bool interim = r.status >= 100 && r.status < 200;
    const bool redirect = r.status >= 300 && r.status < 400;
    if (interim) {
      end = pos;
    } else if (!cl.empty() && std::isdigit(static_cast<unsigned char>(cl[0]))) {
      const size_t len = std::strtoull(cl.c_str(), nullptr, 10);
      end = std::min(raw.size(), pos + len);
      // Trust the length only if what follows is another response or nothing.
      size_t after = end;
      while (after < raw.size() && (raw[after] == '\r' || raw[after] == '\n')) ++after;
      if (after < raw.size() && !StatusLineAt(raw, after)) end = raw.size();
    } else if (redirect || r.status == 401 || r.status == 407) {
      size_t next = NextStatusLine(raw, pos);
      if (next != std::string_view::npos) end = next;
    }
    r.body = std::string(raw.substr(pos, end - pos));
    out.push_back(std::move(r));
    pos = end;
    while (pos < raw.size() && (raw[pos] == '\r' || raw[pos] == '\n')) ++pos;
  }
  return out;
}

AuthChallenge ParseAuthChallenge(std::string_view h) {
  AuthChallenge a;
  h = Trim(h);
  size_t sp = h.find(' ');
  a.scheme = std::string(h.substr(0, sp));
  if (sp == std::string_view::npos) return a;
  std::string_view rest = h.substr(sp + 1);
  // key="value" (or key=token) pairs separated by commas; quoted values may hold commas.
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == ',')) ++i;
    size_t eq = rest.find('=', i);
    if (eq == std::string_view::npos) break;
    std::string key = Lower(Trim(rest.substr(i, eq - i)));
    i = eq + 1;
    std::string val;
    if (i < rest.size() && rest[i] == '"') {
      ++i;
      while (i < rest.size() && rest[i] != '"') {
        if (rest[i] == '\\' && i + 1 < rest.size()) ++i;
        val += rest[i++];
      }
      ++i;
    } else {
      size_t comma = rest.find(',', i);
      val = std::string(Trim(rest.substr(i, comma == std::string_view::npos ? std::string_view::npos : comma - i)));
      i = comma == std::string_view::npos ? rest.size() : comma;
    }
    if (key == "realm") a.realm = val;
    else if (key == "service") a.service = val;
    else if (key == "scope") a.scope = val;
    else if (key == "error") a.error = val;
  }
  return a;
}

}  // namespace edgedecode::doctor
