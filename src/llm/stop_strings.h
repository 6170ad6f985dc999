// Stop strings matched across token boundaries: text is held back while it could still be the start of a
// stop string, and a stop string is never part of the output. One per sequence; not thread-safe.
#pragma once

#include <string>
#include <vector>

namespace edgedecode::llm {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // Appends generated text; returns the text that is safe to emit now. After a stop string is found,
  // stopped() is true and the text before it is returned (the rest is dropped).
  std::string Push(const std::string& text) {
    pending_ += text;
    size_t cut = std::string::npos;
    for (const std::string& s : stops_) {
      if (s.empty()) continue;
      const size_t at = pending_.find(s);
      if (at != std::string::npos && (cut == std::string::npos || at < cut)) cut = at;
    }
    if (cut != std::string::npos) {
      stopped_ = true;
      std::string out = pending_.substr(0, cut);
      pending_.clear();
      return out;
    }
    // Hold back the longest tail that is a proper prefix of a stop string.
    size_t hold = 0;
    for (const std::string& s : stops_)
      for (size_t n = std::min(s.size() - (s.empty() ? 0 : 1), pending_.size()); n > hold; --n)
        if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
          hold = n;
          break;
        }
    std::string out = pending_.substr(0, pending_.size() - hold);
    pending_.erase(0, pending_.size() - hold);
    return out;
  }
  // At the end of generation without a stop: the held-back text.
  std::string Flush() {
    std::string out;
    out.swap(pending_);
    return out;
  }
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace edgedecode::llm
