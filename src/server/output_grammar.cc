#include "server/output_grammar.h"

#include <fmt/format.h>

#include <set>

#include "chat/generic_tools.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema_to_gbnf.h"
#include "server/tool_call_grammar.h"

namespace folio::server {

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}


// Rewrites every rule name of `gbnf` (the identifiers outside literals,
// classes and comments) with `rename`.
template <class Rename>
std::string rewrite_gbnf_names(std::string_view gbnf, Rename rename) {
  std::string out;
  out.reserve(gbnf.size());
  size_t i = 0;
  while (i < gbnf.size()) {
    const char c = gbnf[i];
    if (c == '"' || c == '[') {  // a literal or a class, with escapes
      const char close = c == '"' ? '"' : ']';
      size_t j = i + 1;
      while (j < gbnf.size() && gbnf[j] != close) j += gbnf[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, gbnf.size());
      out.append(gbnf.substr(i, j - i));
      i = j;
    } else if (c == '{') {  // repetition bounds {m,n}
      size_t j = gbnf.find('}', i);
      j = j == std::string_view::npos ? gbnf.size() : j + 1;
      out.append(gbnf.substr(i, j - i));
      i = j;
    } else if (c == '#') {  // a comment, to the end of the line
      size_t j = gbnf.find('\n', i);
      if (j == std::string_view::npos) j = gbnf.size();
      out.append(gbnf.substr(i, j - i));
      i = j;
    } else if (is_name_char(c)) {
      size_t j = i;
      while (j < gbnf.size() && is_name_char(gbnf[j])) ++j;
      out.append(rename(gbnf.substr(i, j - i)));
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

// qwen_xml: <tool_call>\n<function=N>\n(<parameter=P>\nvalue\n</parameter>\n)*
// </function>\n</tool_call>, parameters in schema order (required ones
// always, the others optional); a string value is text without "</", any
// other value the JSON its schema allows. seed: the same calls between
// <seed:tool_call>\n and </seed:tool_call>, values without the newlines
// around them (as Seed-OSS's template writes them).
bool qwen_xml_gbnf(const OpenAiRequest& r, chat::ToolCallFormat format, std::string* out,
                   ApiError* error) {
  const bool seed = format == chat::ToolCallFormat::kSeed;
  const char* value_open = seed ? ">" : ">\n";
  const char* value_close = seed ? "</parameter>\n" : "\n</parameter>\n";
  std::string g;
  std::vector<std::string> functions;
  int n_rules = 0;
  for (const Json& t : r.tools) {
    const Json& fn = t.is_object() && t.contains("function") ? t["function"] : t;
    const std::string name = fn.value("name", "");
    if (r.tool_choice.mode == ToolChoiceMode::kNamed && name != r.tool_choice.name) continue;
    const std::string fn_rule = fmt::format("folio-fn{}", functions.size());
    std::string body = fmt::format("{} ::= {}", fn_rule, gbnf_literal("<function=" + name + ">\n"));
    const Json params = fn.is_object() && fn.contains("parameters") ? fn["parameters"] : Json::object();
    const Json props = params.is_object() && params.contains("properties") ? params["properties"]
                                                                          : Json::object();
    std::set<std::string> required;
    if (params.is_object() && params.contains("required") && params["required"].is_array()) {
      for (const Json& k : params["required"]) {
        if (k.is_string()) required.insert(k.get<std::string>());
      }
    }
    for (const auto& [key, sub] : props.items()) {
      const std::string value_rule = fmt::format("folio-v{}", n_rules++);
      if (!xml_param_value_gbnf(sub, value_rule, key, name, &g, error)) return false;
      const std::string item =
          fmt::format("{} {} {}", gbnf_literal("<parameter=" + key + value_open), value_rule,
                      gbnf_literal(value_close));
      body += required.count(key) ? " " + item : " (" + item + ")?";
    }
    body += " " + gbnf_literal("</function>\n") + "\n";
    g += body;
    functions.push_back(fn_rule);
  }
  if (functions.empty()) {
    *error = bad_request(fmt::format("no tool named '{}'", r.tool_choice.name), "tool_choice");
    return false;
  }
  std::string any;
  for (const std::string& f : functions) any += (any.empty() ? "" : " | ") + f;
  g += fmt::format("folio-tool-block ::= {} ({}) {}\n",
                   gbnf_literal(seed ? "<seed:tool_call>\n" : "<tool_call>\n"), any,
                   gbnf_literal(seed ? "</seed:tool_call>" : "</tool_call>"));
  g += r.parallel_tool_calls ? "root ::= folio-tool-block (\"\\n\" folio-tool-block)*\n"
                             : "root ::= folio-tool-block\n";
  *out = std::move(g);
  return true;
}

// The schema of one call of `tool` as the format writes it: {"name": N,
// <args_key>: parameters}.
Json call_schema(const Json& tool, const char* args_key) {
  const Json& fn = tool.is_object() && tool.contains("function") ? tool["function"] : tool;
  Json params = fn.is_object() && fn.contains("parameters") ? fn["parameters"]
                                                            : Json{{"type", "object"}};
  Json props = Json::object();
  props["name"] = Json{{"const", fn.value("name", "")}};
  props[args_key] = std::move(params);
  return Json{{"type", "object"},
              {"properties", std::move(props)},
              {"required", Json::array({"name", args_key})},
              {"additionalProperties", false}};
}

const Json* find_tool(const Json& tools, const std::string& name) {
  for (const Json& t : tools) {
    const Json& fn = t.is_object() && t.contains("function") ? t["function"] : t;
    if (fn.is_object() && fn.value("name", "") == name) return &t;
  }
  return nullptr;
}

// The generic format's reply (chat/generic_tools.h): a call or, unless
// tool_choice demands one, a {"response": ...} object.
bool generic_gbnf(const OpenAiRequest& r, std::string* out, ApiError* error) {
  Json tools;
  if (!enforceable_tools(r.tools, &tools, error)) return false;
  chat::GenericToolOptions o;
  o.allow_response = r.tool_choice.mode == ToolChoiceMode::kAuto;
  if (r.tool_choice.mode == ToolChoiceMode::kNamed) o.only_tool = r.tool_choice.name;
  o.parallel = r.parallel_tool_calls;
  Result<Json> schema = chat::generic_reply_schema(tools, o);
  if (!schema.ok()) {
    *error = bad_request(std::string(schema.status().message()), "tool_choice");
    return false;
  }
  Result<std::string> g = grammar::json_schema_to_gbnf(*schema);
  if (!g.ok()) {
    *error =
        bad_request(fmt::format("the tools cannot be enforced: {}", g.status().message()), "tools");
    return false;
  }
  *out = std::move(g).value();
  return true;
}

// GBNF for the tool call(s) tool_choice demands.
bool tool_call_gbnf(const OpenAiRequest& r, chat::ToolCallFormat format, std::string* out,
                    ApiError* error) {
  if (format == chat::ToolCallFormat::kGeneric) return generic_gbnf(r, out, error);
  if (format == chat::ToolCallFormat::kQwenXml || format == chat::ToolCallFormat::kSeed) {
    return qwen_xml_gbnf(r, format, out, error);
  }
  if (format != chat::ToolCallFormat::kHermes && format != chat::ToolCallFormat::kLlama3) {
    *error = bad_request(fmt::format("tool_choice '{}' cannot be enforced for this model's "
                                     "tool-call format ({}): use 'auto'",
                                     r.tool_choice.mode == ToolChoiceMode::kRequired
                                         ? "required"
                                         : r.tool_choice.name,
                                     chat::tool_call_format_name(format)),
                         "tool_choice");
    return false;
  }
  const char* args_key = format == chat::ToolCallFormat::kLlama3 ? "parameters" : "arguments";
  Json tools;
  if (!enforceable_tools(r.tools, &tools, error)) return false;
  Json schema;
  if (r.tool_choice.mode == ToolChoiceMode::kNamed) {
    const Json* t = find_tool(tools, r.tool_choice.name);
    if (t == nullptr) {
      *error = bad_request(fmt::format("no tool named '{}'", r.tool_choice.name), "tool_choice");
      return false;
    }
    schema = call_schema(*t, args_key);
  } else {
    Json any = Json::array();
    for (const Json& t : tools) any.push_back(call_schema(t, args_key));
    schema = any.size() == 1 ? any[0] : Json{{"anyOf", std::move(any)}};
  }
  Result<std::string> call = grammar::json_schema_to_gbnf(schema);
  if (!call.ok()) {
    *error = bad_request(fmt::format("a tool's parameters cannot be enforced: {}",
                                     call.status().message()),
                         "tools");
    return false;
  }
  std::string g = rename_gbnf_rule(*call, "root", "folio-tool-call");
  const bool many = r.parallel_tool_calls;
  if (format == chat::ToolCallFormat::kHermes) {
    g += many ? "root ::= folio-tool-block (\"\\n\" folio-tool-block)*\n"
              : "root ::= folio-tool-block\n";
    g += "folio-tool-block ::= \"<tool_call>\\n\" folio-tool-call \"\\n</tool_call>\"\n";
  } else {
    g += many ? "root ::= folio-tool-call (\"; \" folio-tool-call)*\n"
              : "root ::= folio-tool-call\n";
  }
  *out = std::move(g);
  return true;
}

// A GBNF character class holding everything but `c`.
std::string gbnf_not_char(char c) {
  std::string out = "[^";
  if (c == ']' || c == '[' || c == '\\' || c == '^' || c == '-') out += '\\';
  out += c;
  return out + "]";
}

}  // namespace

std::string reasoning_prefix_gbnf(std::string_view open, std::string_view close,
                                  std::string_view then, std::string_view prefix) {
  // Text free of `close`: any character but its first, or a proper prefix
  // of it followed by a character that does not continue it.
  std::string body = gbnf_not_char(close[0]);
  for (size_t k = 1; k < close.size(); ++k) {
    body += fmt::format(" | {} {}", gbnf_literal(close.substr(0, k)), gbnf_not_char(close[k]));
  }
  std::string g = fmt::format("{}-text ::= ({})*\n", prefix, body);
  g += fmt::format("{}-block ::= {}{}-text {} [ \\t\\n]*\n", prefix,
                   open.empty() ? "" : gbnf_literal(open) + " ", prefix, gbnf_literal(close));
  g += fmt::format("{} ::= {}-block{} {}\n", prefix, prefix, open.empty() ? "" : "?", then);
  return g;
}

std::string rename_gbnf_rule(std::string_view gbnf, std::string_view from, std::string_view to) {
  return rewrite_gbnf_names(gbnf, [&](std::string_view w) { return std::string(w == from ? to : w); });
}

std::string gbnf_literal(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string scope_gbnf_rules(std::string_view gbnf, std::string_view name) {
  return rewrite_gbnf_names(gbnf, [&](std::string_view w) {
    return w == "root" ? std::string(name) : std::string(name) + "-" + std::string(w);
  });
}

bool xml_param_value_gbnf(const Json& sub, std::string_view value_rule, std::string_view key,
                          std::string_view name, std::string* g, ApiError* error) {
  if (sub.is_object() && sub.value("type", "") == "string" && sub.size() <= 3 &&
      !sub.contains("enum") && !sub.contains("const") && !sub.contains("pattern") &&
      !sub.contains("format") && !sub.contains("minLength") && !sub.contains("maxLength")) {
    *g += fmt::format("{} ::= ([^<] | \"<\" [^/])*\n", value_rule);
    return true;
  }
  Result<std::string> v = grammar::json_schema_to_gbnf(sub);
  if (!v.ok()) {
    *error = bad_request(fmt::format("parameter '{}' of '{}' cannot be enforced: {}", key, name,
                                     v.status().message()),
                         "tools");
    return false;
  }
  *g += scope_gbnf_rules(*v, value_rule);
  return true;
}

bool enforceable_tools(const Json& tools, Json* out, ApiError* error) {
  *out = Json::array();
  for (const Json& t : tools) {
    Json tool = t;
    Json& fn = tool.is_object() && tool.contains("function") ? tool["function"] : tool;
    if (fn.is_object() && fn.contains("parameters")) {
      Result<std::string> g = grammar::json_schema_to_gbnf(fn["parameters"]);
      if (!g.ok()) {
        if (fn.value("strict", false)) {
          *error = bad_request(fmt::format("the parameters of the strict tool '{}' cannot be "
                                           "enforced: {}",
                                           fn.value("name", ""), g.status().message()),
                               "tools");
          return false;
        }
        fn["parameters"] = Json{{"type", "object"}};
      }
    }
    out->push_back(std::move(tool));
  }
  return true;
}

bool output_grammar(const OpenAiRequest& r, chat::ToolCallFormat format,
                    std::shared_ptr<const grammar::CompiledGrammar>* out, ApiError* error,
                    chat::ReasoningSyntax reasoning, bool starts_in_reasoning,
                    grammar::GrammarTriggers* triggers) {
  out->reset();
  if (triggers != nullptr) *triggers = {};
  std::string gbnf;
  const char* param = "response_format";
  const bool tool_forced = r.kind == ApiKind::kChat && r.tools.is_array() && !r.tools.empty() &&
                           (r.tool_choice.mode == ToolChoiceMode::kRequired ||
                            r.tool_choice.mode == ToolChoiceMode::kNamed);
  if (tool_forced && r.output.kind != OutputConstraint::Kind::kNone) {
    *error = bad_request("tool_choice 'required' or a named function cannot be combined with "
                         "response_format, json_schema or grammar",
                         "tool_choice");
    return false;
  }
  // The generic format constrains every reply of a request with tools: it
  // is how the model is told to write a call at all.
  const bool generic_tools = r.kind == ApiKind::kChat && r.tools.is_array() && !r.tools.empty() &&
                             format == chat::ToolCallFormat::kGeneric;
  switch (r.output.kind) {
    case OutputConstraint::Kind::kNone:
      if (!tool_forced && !generic_tools) return true;
      param = "tool_choice";
      if (tool_forced && has_lazy_call_grammar(format, reasoning)) {
        LazyCallGrammar lazy;
        if (!lazy_call_grammar(r, format, reasoning, &lazy, error)) return false;
        if (triggers == nullptr) {
          *error = bad_request("tool_choice cannot be enforced here: use 'auto'", "tool_choice");
          return false;
        }
        triggers->words = std::move(lazy.triggers);
        triggers->end_before_trigger = false;  // the call is required
        gbnf = std::move(lazy.gbnf);
        break;
      }
      if (!tool_call_gbnf(r, format, &gbnf, error)) return false;
      if (const std::string_view close = chat::reasoning_close_tag(reasoning); !close.empty()) {
        gbnf = rename_gbnf_rule(gbnf, "root", "folio-reply");
        gbnf +=
            reasoning_prefix_gbnf(starts_in_reasoning ? "" : chat::reasoning_open_tag(reasoning),
                                  close, "folio-reply", "folio-think");
        gbnf += "root ::= folio-think\n";
      }
      break;
    case OutputConstraint::Kind::kJsonObject:
      gbnf = grammar::json_object_gbnf();
      break;
    case OutputConstraint::Kind::kJsonSchema: {
      Result<std::string> g = grammar::json_schema_to_gbnf(r.output.schema);
      if (!g.ok()) {
        *error = bad_request(std::string(g.status().message()), param);
        return false;
      }
      gbnf = std::move(g).value();
      break;
    }
    case OutputConstraint::Kind::kGrammar:
      param = "grammar";
      gbnf = r.output.grammar;
      break;
  }
  Result<std::shared_ptr<const grammar::CompiledGrammar>> compiled = grammar::compile_gbnf(gbnf);
  if (!compiled.ok()) {
    *error = bad_request(std::string(compiled.status().message()), param);
    return false;
  }
  *out = std::move(compiled).value();
  return true;
}

}  // namespace folio::server
