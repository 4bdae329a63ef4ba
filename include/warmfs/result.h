// Errors as values: Status (an error code and a message) and Result<T>.
//
// Every layer returns these instead of throwing. The code says what went wrong in terms a
// caller can act on; the message is one human-readable line for logs and the CLI. Mapping
// to errno happens in one place (common/errno_map.h).
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace warmfs {

enum class Errc {
  kOk = 0,
  kNotFound,             // no such object, bucket or path
  kAccessDenied,         // 401/403: credentials wrong or insufficient
  kPreconditionFailed,   // 412: If-Match failed, the object changed
  kInvalidArgument,      // bad input from the caller
  kIo,                   // transport or server failure after retries
  kTimeout,              // no answer in time
  kUnavailable,          // endpoint unreachable
  kCorrupt,              // checksum mismatch, malformed response
  kNoSpace,              // local disk full
  kExists,               // already exists
  kNotEmpty,             // directory not empty
  kReadOnly,             // write to a read-only mount
  kNotSupported,         // operation not supported
  kRangeNotSatisfiable,  // 416: read past the end
  kCancelled,            // shutting down
  kInternal,             // a bug
  kIsDirectory,          // a file operation on a directory
  kNotDirectory,         // a directory operation on a file
  kNotPermitted,         // an operation this filesystem never allows (hard links)
  kNameTooLong,          // a path component of more than 255 bytes
};

const char* errc_name(Errc c);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Errc code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }

  bool is_ok() const { return code_ == Errc::kOk; }
  explicit operator bool() const { return is_ok(); }
  Errc code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NotFound: no such key" style, for logs.
  std::string to_string() const;

 private:
  Errc code_ = Errc::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).is_ok() && "Result from an ok Status");
  }
  Result(Errc code, std::string message) : v_(Status(code, std::move(message))) {}

  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }

  T& value() & {
    assert(is_ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(is_ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(is_ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Status& status() const& {
    static const Status kOkStatus;
    return is_ok() ? kOkStatus : std::get<1>(v_);
  }
  Status take_status() && { return is_ok() ? Status() : std::get<1>(std::move(v_)); }
  Errc code() const { return is_ok() ? Errc::kOk : std::get<1>(v_).code(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace warmfs

// Propagate an error Status or Result from an expression returning Status.
#define WARMFS_RETURN_IF_ERROR(expr)                    \
  do {                                                  \
    ::warmfs::Status warmfs_status_ = (expr);           \
    if (!warmfs_status_.is_ok()) return warmfs_status_; \
  } while (0)

#define WARMFS_CONCAT_INNER(a, b) a##b
#define WARMFS_CONCAT(a, b) WARMFS_CONCAT_INNER(a, b)
// WARMFS_ASSIGN_OR_RETURN(auto x, f()); binds x to the value or returns the error.
#define WARMFS_ASSIGN_OR_RETURN(lhs, expr) \
  WARMFS_ASSIGN_OR_RETURN_IMPL(WARMFS_CONCAT(warmfs_result_, __LINE__), lhs, expr)
#define WARMFS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)     \
  auto tmp = (expr);                                     \
  if (!tmp.is_ok()) return std::move(tmp).take_status(); \
  lhs = std::move(tmp).value()
