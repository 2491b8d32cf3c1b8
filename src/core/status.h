// Status and Result<T>: the error currency at every input boundary (GGUF, HTTP,
// CLI, templates). Errors carry a code and a message that names the offending
// file / field / tensor / value. Invariants inside the engine use FOLIO_CHECK.
#pragma once

#include <fmt/format.h>

#include <string>
#include <utility>
#include <variant>

namespace folio {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // bad input from outside (flags, JSON, file contents)
  kNotFound,          // missing file, key, tensor
  kOutOfRange,        // index/offset outside a valid range
  kDataLoss,          // truncated or corrupt data
  kUnsupported,       // well-formed but not handled (tensor type, arch)
  kResourceExhausted, // out of memory / blocks
  kIoError,           // OS-level read/write/mmap failure
  kInternal,          // bug: should not happen
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "CODE: message", for logs and CLI output.
  std::string to_string() const;

  // Prepends context ("while loading X: ") to an error; no-op on OK.
  Status with_context(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename... Args>
Status make_error(StatusCode code, fmt::format_string<Args...> f, Args&&... args) {
  return Status(code, fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
Status invalid_argument(fmt::format_string<Args...> f, Args&&... args) {
  return make_error(StatusCode::kInvalidArgument, f, std::forward<Args>(args)...);
}
template <typename... Args>
Status not_found(fmt::format_string<Args...> f, Args&&... args) {
  return make_error(StatusCode::kNotFound, f, std::forward<Args>(args)...);
}
template <typename... Args>
Status data_loss(fmt::format_string<Args...> f, Args&&... args) {
  return make_error(StatusCode::kDataLoss, f, std::forward<Args>(args)...);
}
template <typename... Args>
Status unsupported(fmt::format_string<Args...> f, Args&&... args) {
  return make_error(StatusCode::kUnsupported, f, std::forward<Args>(args)...);
}
template <typename... Args>
Status out_of_range(fmt::format_string<Args...> f, Args&&... args) {
  return make_error(StatusCode::kOutOfRange, f, std::forward<Args>(args)...);
}
template <typename... Args>
Status io_error(fmt::format_string<Args...> f, Args&&... args) {
  return make_error(StatusCode::kIoError, f, std::forward<Args>(args)...);
}
template <typename... Args>
Status resource_exhausted(fmt::format_string<Args...> f, Args&&... args) {
  return make_error(StatusCode::kResourceExhausted, f, std::forward<Args>(args)...);
}
template <typename... Args>
Status internal_error(fmt::format_string<Args...> f, Args&&... args) {
  return make_error(StatusCode::kInternal, f, std::forward<Args>(args)...);
}

// Result<T>: a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                 // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {           // NOLINT: implicit by design
    if (std::get<Status>(v_).ok()) v_ = Status(StatusCode::kInternal, "Result built from OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace folio

#define FOLIO_CONCAT_INNER_(a, b) a##b
#define FOLIO_CONCAT_(a, b) FOLIO_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` is not OK.
#define FOLIO_RETURN_IF_ERROR(expr)                 \
  do {                                              \
    ::folio::Status folio_status_ = (expr);         \
    if (!folio_status_.ok()) return folio_status_;  \
  } while (0)

// `lhs = value of expr` or return its error. lhs may be a declaration.
#define FOLIO_ASSIGN_OR_RETURN(lhs, expr) \
  FOLIO_ASSIGN_OR_RETURN_IMPL_(FOLIO_CONCAT_(folio_result_, __LINE__), lhs, expr)
#define FOLIO_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
