// Status and Result<T>: errors that can happen (I/O, bad files, bad config) are values, not exceptions.
// Assertions are for invariants only. Both types are cheap to move and not thread-safe to share mutably.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace edgedecode {

// Why an operation failed; the CLI maps codes to exit codes (src/cli/exit_code.h, docs/cli.md).
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // usage / config error (exit 2)
  kNotFound,         // file or key missing
  kIoError,          // read/write failed
  kCorrupt,          // a file that does not parse or fails validation (exit 3 where a tool says so)
  kUnsupported,      // valid input the tool does not handle (an architecture, a tensor type)
  kResourceExhausted,// would not fit in memory / context
  kUnavailable,      // an external component the operation needs (the ONNX Runtime oracle) is missing or failed
  kInternal,
};

class Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prepends context, e.g. the file name: "model.gguf: tensor 'x' out of bounds".
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status Corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
inline Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// A value or the Status saying why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}                 // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT
  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace edgedecode

// Propagates a non-OK Status from an expression returning Status.
#define ED_RETURN_IF_ERROR(expr)            \
  do {                                      \
    ::edgedecode::Status _st = (expr);      \
    if (!_st.ok()) return _st;              \
  } while (0)

#define ED_CONCAT_INNER(a, b) a##b
#define ED_CONCAT(a, b) ED_CONCAT_INNER(a, b)
// ED_ASSIGN_OR_RETURN(auto x, Foo()); assigns the value or returns the Status.
#define ED_ASSIGN_OR_RETURN(lhs, expr)                              \
  auto ED_CONCAT(_res_, __LINE__) = (expr);                         \
  if (!ED_CONCAT(_res_, __LINE__).ok()) return ED_CONCAT(_res_, __LINE__).status(); \
  lhs = std::move(ED_CONCAT(_res_, __LINE__)).value()
