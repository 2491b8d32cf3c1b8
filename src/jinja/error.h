// Template errors. Inside the engine a failing operation throws JinjaError
// (any expression can fail, several calls deep, and unwinding keeps the
// evaluator short); Template::parse / Template::render catch it and return a
// Status, so no exception crosses the engine's API.
//
// Kinds carry jinja2's exception class names, so a folio error can be compared
// with the one Python raises for the same template and input.
#pragma once

#include <fmt/format.h>

#include <exception>
#include <string>

namespace folio::jinja {

enum class ErrorKind {
  kSyntax,        // TemplateSyntaxError: lexer / parser
  kAssertion,     // TemplateAssertionError: unknown filter / test at compile time
  kTemplate,      // TemplateError: raise_exception()
  kRuntime,       // TemplateRuntimeError
  kUndefined,     // UndefinedError
  kSecurity,      // SecurityError: sandbox (mutating methods, huge ranges)
  kType,          // TypeError
  kValue,         // ValueError
  kKey,           // KeyError
  kIndex,         // IndexError
  kZeroDivision,  // ZeroDivisionError
  kOverflow,      // OverflowError
  kRecursion,     // RecursionError: macro recursion limit
  kLimit,         // folio only: output size / step budget exceeded
  kUnsupported,   // folio only: a jinja2 feature folio does not implement
};

// jinja2 / Python exception class name ("UndefinedError").
const char* error_kind_name(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::kRuntime;
  std::string message;
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based; 0 = unknown
  // "UndefinedError at line 3, column 7: 'foo' is undefined"
  std::string to_string() const;
};

class JinjaError : public std::exception {
 public:
  JinjaError(ErrorKind kind, std::string message) {
    error_.kind = kind;
    error_.message = std::move(message);
  }
  const char* what() const noexcept override { return error_.message.c_str(); }
  const Error& error() const { return error_; }
  bool has_position() const { return error_.line > 0; }
  void set_position(int line, int column) {
    error_.line = line;
    error_.column = column;
  }

 private:
  Error error_;
};

template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, fmt::format_string<Args...> f, Args&&... args) {
  throw JinjaError(kind, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace folio::jinja
