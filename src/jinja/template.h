// folio's Jinja2-compatible template engine: the API.
//
//   Result<Template> t = Template::parse(source);          // parse once
//   Result<std::string> out = t->render(vars, options);    // render many times
//
// Rendering matches Python's jinja2 (3.1) configured as Hugging Face
// transformers configures it for chat templates:
//   ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
//                                 extensions=[loopcontrols, {% generation %}])
// with tojson = json.dumps(ensure_ascii=False, ...), raise_exception(msg) and
// strftime_now(fmt) (RenderOptions::now fixes its date). Values follow Python:
// True / None printing, int vs float, repr() of containers, str methods,
// undefined variables print as "" but fail when used (attribute of an
// undefined value, arithmetic, calls), mutating list / dict methods raise
// SecurityError like the sandbox.
//
// Errors never escape as exceptions: parse and render return a Status whose
// message reads "<jinja2 exception class> at line L, column C: <message>";
// render() can also fill a jinja::Error with the class and the bare message
// (for raise_exception, the template's own text). Hostile templates are
// bounded: nesting depth at parse time, and output size, steps, macro
// recursion and value sizes at render time (RenderOptions).
//
// A Template is immutable after parse; render() may run concurrently from
// several threads.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "jinja/error.h"
#include "jinja/interpreter.h"

namespace folio::jinja {

struct ParseOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

class Template {
 public:
  static Result<Template> parse(std::string_view source, const ParseOptions& options = {},
                                Error* error = nullptr);

  // `variables`: a JSON object (null = none). Keys keep their order.
  Result<std::string> render(const nlohmann::ordered_json& variables,
                             const RenderOptions& options = {}, Error* error = nullptr) const;

  const std::string& source() const;  // normalised source

 private:
  struct Impl;
  explicit Template(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// Status for an engine error (kInvalidArgument for template faults,
// kResourceExhausted for limits, kUnsupported for unimplemented features).
Status error_status(const Error& error);

}  // namespace folio::jinja
