#include "jinja/template.h"

#include "core/utf8.h"
#include "jinja/json.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"
#include "jinja/py_string.h"

namespace folio::jinja {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kSyntax:
      return "TemplateSyntaxError";
    case ErrorKind::kAssertion:
      return "TemplateAssertionError";
    case ErrorKind::kTemplate:
      return "TemplateError";
    case ErrorKind::kRuntime:
      return "TemplateRuntimeError";
    case ErrorKind::kUndefined:
      return "UndefinedError";
    case ErrorKind::kSecurity:
      return "SecurityError";
    case ErrorKind::kType:
      return "TypeError";
    case ErrorKind::kValue:
      return "ValueError";
    case ErrorKind::kKey:
      return "KeyError";
    case ErrorKind::kIndex:
      return "IndexError";
    case ErrorKind::kZeroDivision:
      return "ZeroDivisionError";
    case ErrorKind::kOverflow:
      return "OverflowError";
    case ErrorKind::kRecursion:
      return "RecursionError";
    case ErrorKind::kLimit:
      return "LimitExceeded";
    case ErrorKind::kUnsupported:
      return "Unsupported";
  }
  return "Error";
}

std::string Error::to_string() const {
  if (line > 0)
    return fmt::format("{} at line {}, column {}: {}", error_kind_name(kind), line, column,
                       message);
  return fmt::format("{}: {}", error_kind_name(kind), message);
}

Status error_status(const Error& error) {
  StatusCode code = StatusCode::kInvalidArgument;
  if (error.kind == ErrorKind::kLimit || error.kind == ErrorKind::kRecursion)
    code = StatusCode::kResourceExhausted;
  if (error.kind == ErrorKind::kUnsupported) code = StatusCode::kUnsupported;
  return Status(code, "template: " + error.to_string());
}

struct Template::Impl {
  std::string source;
  Body body;
};

const std::string& Template::source() const {
  return impl_->source;
}

Result<Template> Template::parse(std::string_view source, const ParseOptions& options,
                                 Error* error) {
  auto impl = std::make_shared<Impl>();
  impl->source = normalize_source(source, options.keep_trailing_newline);
  try {
    size_t bad = 0;
    if (!utf8_valid(impl->source, &bad)) {
      JinjaError e(ErrorKind::kSyntax, "template source is not valid UTF-8");
      int line, col;
      offset_to_position(impl->source, static_cast<uint32_t>(bad), &line, &col);
      e.set_position(line, col);
      throw e;
    }
    if (impl->source.size() > UINT32_MAX / 2)
      throw JinjaError(ErrorKind::kLimit, "template source too large");
    LexerOptions lex;
    lex.trim_blocks = options.trim_blocks;
    lex.lstrip_blocks = options.lstrip_blocks;
    lex.keep_trailing_newline = options.keep_trailing_newline;
    std::vector<Token> tokens = tokenize(impl->source, lex);
    impl->body = parse_template(impl->source, tokens);
  } catch (const JinjaError& e) {
    if (error) *error = e.error();
    return error_status(e.error());
  }
  return Template(std::move(impl));
}

Result<std::string> Template::render(const nlohmann::ordered_json& variables,
                                     const RenderOptions& options, Error* error) const {
  try {
    Value vars;
    if (!variables.is_null()) {
      if (!variables.is_object())
        throw JinjaError(ErrorKind::kType, "render variables must be a JSON object");
      vars = value_from_json(variables);
    }
    Interpreter in(impl_->source, options, vars.is_dict() ? &vars.dict() : nullptr);
    return in.render(impl_->body);
  } catch (const JinjaError& e) {
    if (error) *error = e.error();
    return error_status(e.error());
  } catch (const std::bad_alloc&) {
    Error e;
    e.kind = ErrorKind::kLimit;
    e.message = "out of memory while rendering the template";
    if (error) *error = e;
    return error_status(e);
  }
}

}  // namespace folio::jinja
