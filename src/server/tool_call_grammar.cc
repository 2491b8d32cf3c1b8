#include "server/tool_call_grammar.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "grammar/json_schema_to_gbnf.h"
#include "server/output_grammar.h"

namespace folio::server {

namespace {

// One tool the grammar may call.
struct LazyTool {
  std::string name;
  Json params;             // its parameters schema as enforced
  std::string args;        // the rule of its arguments object
  std::string rule;        // the rule of one call of it (set by the format)
};

// The tools tool_choice allows, each with its arguments rule in *g.
bool lazy_tools(const OpenAiRequest& r, std::vector<LazyTool>* out, std::string* g,
                ApiError* error) {
  Json tools;
  if (!enforceable_tools(r.tools, &tools, error)) return false;
  for (const Json& t : tools) {
    const Json& fn = t.is_object() && t.contains("function") ? t["function"] : t;
    LazyTool tool;
    tool.name = fn.is_object() ? fn.value("name", "") : "";
    if (r.tool_choice.mode == ToolChoiceMode::kNamed && tool.name != r.tool_choice.name) continue;
    tool.params = fn.is_object() && fn.contains("parameters") ? fn["parameters"]
                                                              : Json{{"type", "object"}};
    tool.args = fmt::format("folio-args{}", out->size());
    Result<std::string> a = grammar::json_schema_to_gbnf(tool.params);
    if (!a.ok()) {
      *error = bad_request(fmt::format("the parameters of '{}' cannot be enforced: {}", tool.name,
                                       a.status().message()),
                           "tools");
      return false;
    }
    *g += scope_gbnf_rules(*a, tool.args);
    out->push_back(std::move(tool));
  }
  if (out->empty()) {
    *error = bad_request(fmt::format("no tool named '{}'", r.tool_choice.name), "tool_choice");
    return false;
  }
  return true;
}

// The rule `name` ::= one of the tools' call rules.
std::string any_call(const std::vector<LazyTool>& tools, std::string_view name) {
  std::string alts;
  for (const LazyTool& t : tools) alts += (alts.empty() ? "" : " | ") + t.rule;
  return fmt::format("{} ::= {}\n", name, alts);
}

// `item`, or with parallel calls one or more of it separated by `sep`.
std::string repeated(std::string_view item, std::string_view sep, bool parallel) {
  if (!parallel) return std::string(item);
  return fmt::format("{} ({} {})*", item, sep, item);
}

// The properties of a parameters schema in order, with whether each is
// required.
std::vector<std::pair<std::string, bool>> schema_properties(const Json& params, Json* props) {
  *props = params.is_object() && params.contains("properties") ? params["properties"]
                                                               : Json::object();
  std::set<std::string> required;
  if (params.is_object() && params.contains("required") && params["required"].is_array()) {
    for (const Json& k : params["required"]) {
      if (k.is_string()) required.insert(k.get<std::string>());
    }
  }
  std::vector<std::pair<std::string, bool>> out;
  if (!props->is_object()) return out;
  for (const auto& [key, sub] : props->items()) out.emplace_back(key, required.count(key) > 0);
  return out;
}

// XML-style parameters (glm, minimax): one `open(key) value close` item
// per property in schema order, the optional ones optional. Returns the
// sequence's GBNF; value rules go to *g.
bool xml_params(const LazyTool& tool, size_t index,
                std::string (*open)(const std::string&, const Json&), std::string_view close,
                std::string* g, std::string* seq, ApiError* error) {
  Json props;
  size_t k = 0;
  for (const auto& [key, required] : schema_properties(tool.params, &props)) {
    const std::string value = fmt::format("folio-t{}-v{}", index, k++);
    if (!xml_param_value_gbnf(props[key], value, key, tool.name, g, error)) return false;
    const std::string item = fmt::format("{} {} {}", gbnf_literal(open(key, props[key])), value,
                                         gbnf_literal(close));
    *seq += required ? " " + item : " (" + item + ")?";
  }
  return true;
}

// A value rule for one keyword argument: appends rule `rule` for a value
// of `schema` to *g.
using KwargValueRule = bool (*)(const Json& schema, const std::string& rule, std::string_view key,
                                std::string_view tool, std::string* g, ApiError* error);

// LFM2's k=JSON values.
bool json_kwarg_value(const Json& schema, const std::string& rule, std::string_view key,
                      std::string_view tool, std::string* g, ApiError* error) {
  Result<std::string> v = grammar::json_schema_to_gbnf(schema);
  if (!v.ok()) {
    *error = bad_request(fmt::format("parameter '{}' of '{}' cannot be enforced: {}", key, tool,
                                     v.status().message()),
                         "tools");
    return false;
  }
  *g += scope_gbnf_rules(*v, rule);
  return true;
}

// Gemma 4's notation (chat/gemma4_calls.h): the value's JSON type where the
// schema names a scalar one, else any value (folio-g4-value).
bool gemma4_kwarg_value(const Json& schema, const std::string& rule, std::string_view,
                        std::string_view, std::string* g, ApiError*) {
  const std::string type = schema.is_object() ? schema.value("type", "") : "";
  std::string body = "folio-g4-value";
  if (type == "string" && !schema.contains("enum") && !schema.contains("const")) {
    body = "folio-g4-string";
  } else if (type == "integer") {
    body = "\"-\"? [0-9]{1,18}";
  } else if (type == "number") {
    body = "folio-g4-number";
  } else if (type == "boolean") {
    body = "(\"true\" | \"false\")";
  }
  *g += fmt::format("{} ::= {}\n", rule, body);
  return true;
}

constexpr const char* kGemma4ValueGbnf =
    "folio-g4-string ::= \"<|\\\"|>\" ([^<] | \"<\" [^|])* \"<|\\\"|>\"\n"
    "folio-g4-number ::= \"-\"? [0-9]{1,18} (\".\" [0-9]{1,18})?\n"
    "folio-g4-key ::= [A-Za-z_] [A-Za-z0-9_]{0,63}\n"
    "folio-g4-value ::= folio-g4-string | folio-g4-number | \"true\" | \"false\" | \"null\"\n"
    "  | \"{\" (folio-g4-pair (\",\" folio-g4-pair)*)? \"}\"\n"
    "  | \"[\" (folio-g4-value (\",\" folio-g4-value)*)? \"]\"\n"
    "folio-g4-pair ::= folio-g4-key \":\" folio-g4-value\n";

// Keyword arguments KEY<assign>VALUE with `sep` between: rules F_j (nothing
// written yet, from property j on) and K_j (something written) over the
// properties (in schema order, or sorted by name), so optional ones may be
// left out anywhere without a stray separator.
bool kwargs_chain(const LazyTool& tool, size_t index, std::string_view sep,
                  std::string_view assign, bool sorted, KwargValueRule value_rule, std::string* g,
                  std::string* seq, ApiError* error) {
  Json props;
  auto list = schema_properties(tool.params, &props);
  if (sorted) std::sort(list.begin(), list.end());
  const size_t n = list.size();
  auto f = [&](size_t j) { return fmt::format("folio-t{}-f{}", index, j); };
  auto k = [&](size_t j) { return fmt::format("folio-t{}-k{}", index, j); };
  *g += fmt::format("{} ::= \"\"\n{} ::= \"\"\n", f(n), k(n));
  for (size_t j = n; j-- > 0;) {
    const auto& [key, required] = list[j];
    const std::string value = fmt::format("folio-t{}-v{}", index, j);
    if (!value_rule(props[key], value, key, tool.name, g, error)) return false;
    const std::string item = fmt::format("{} {}", gbnf_literal(key + std::string(assign)), value);
    *g += fmt::format("{} ::= {} {}{}\n", f(j), item, k(j + 1), required ? "" : " | " + f(j + 1));
    *g += fmt::format("{} ::= {} {} {}{}\n", k(j), gbnf_literal(sep), item, k(j + 1),
                      required ? "" : " | " + k(j + 1));
  }
  *seq = f(0);
  return true;
}

std::string glm_key(const std::string& k, const Json&) {
  return "<arg_key>" + k + "</arg_key>\n<arg_value>";
}
std::string minimax_key(const std::string& k, const Json&) {
  return "<parameter name=\"" + k + "\">";
}
std::string dsml_key(const std::string& k, const Json& schema) {
  const bool text = schema.is_object() && schema.value("type", "") == "string";
  return "<｜DSML｜parameter name=\"" + k + "\" string=\"" + (text ? "true" : "false") + "\">";
}

// {"<name_key>": "N", "<args_key>": ARGS} as the JSON-list formats write it.
std::string json_call(const LazyTool& t, std::string_view name_key, std::string_view args_key) {
  return fmt::format("{} {} \"}}\"",
                     gbnf_literal(fmt::format("{{\"{}\": \"{}\", \"{}\": ", name_key, t.name,
                                              args_key)),
                     t.args);
}

}  // namespace

bool has_lazy_call_grammar(chat::ToolCallFormat format, chat::ReasoningSyntax reasoning) {
  using F = chat::ToolCallFormat;
  switch (format) {
    case F::kMistral:
    case F::kGlm:
    case F::kNemotron:
    case F::kLfm2:
    case F::kDeepSeek:
    case F::kKimi:
    case F::kMiniMax:
    case F::kCommand:
    case F::kFunctionary:
    case F::kFunctionaryV32:
    case F::kGranite:
    case F::kPhi4Mini:
    case F::kGemma4:
    case F::kDeepSeekV32:
      return true;
    case F::kNone:
      return reasoning == chat::ReasoningSyntax::kHarmony;
    default:
      return false;
  }
}

bool lazy_call_grammar(const OpenAiRequest& r, chat::ToolCallFormat format,
                       chat::ReasoningSyntax reasoning, LazyCallGrammar* out, ApiError* error) {
  using F = chat::ToolCallFormat;
  if (!has_lazy_call_grammar(format, reasoning)) {
    *error = bad_request(fmt::format("tool_choice cannot be enforced for the tool-call format {}",
                                     chat::tool_call_format_name(format)),
                         "tool_choice");
    return false;
  }
  if (format == F::kGemma4) {
    // Its notation is not JSON: types and required keys hold, not the rest
    // of a schema.
    for (const Json& t : r.tools) {
      const Json& fn = t.is_object() && t.contains("function") ? t["function"] : t;
      if (fn.is_object() && fn.value("strict", false)) {
        *error = bad_request(fmt::format("the strict tool '{}' cannot be enforced in Gemma 4's "
                                         "argument notation",
                                         fn.value("name", "")),
                             "tools");
        return false;
      }
    }
  }
  std::string g;
  std::vector<LazyTool> tools;
  if (!lazy_tools(r, &tools, &g, error)) return false;
  const bool many = r.parallel_tool_calls;
  std::string root;
  std::string trigger;
  for (size_t i = 0; i < tools.size(); ++i) {
    LazyTool& t = tools[i];
    t.rule = fmt::format("folio-call{}", i);
    std::string body;
    switch (format) {
      case F::kMistral:  // the JSON list's item; the name[ARGS] form below
        body = json_call(t, "name", "arguments");
        g += fmt::format("folio-named{} ::= {} {}\n", i, gbnf_literal(t.name + "[ARGS]"), t.args);
        break;
      case F::kNemotron:
      case F::kGranite:
      case F::kPhi4Mini:
        body = json_call(t, "name", "arguments");
        break;
      case F::kCommand:
        body = fmt::format("\"{{\\\"tool_call_id\\\": \\\"\" [0-9]{{1,3}} {} {} \"}}\"",
                           gbnf_literal(fmt::format("\", \"tool_name\": \"{}\", \"parameters\": ",
                                                    t.name)),
                           t.args);
        break;
      case F::kGlm: {
        std::string seq;
        if (!xml_params(t, i, glm_key, "</arg_value>\n", &g, &seq, error)) return false;
        body = fmt::format("\"<tool_call>\" {} {} \"</tool_call>\"", gbnf_literal(t.name + "\n"),
                           seq);
        break;
      }
      case F::kMiniMax: {
        std::string seq;
        if (!xml_params(t, i, minimax_key, "</parameter>\n", &g, &seq, error)) return false;
        body = fmt::format("{} {} \"</invoke>\\n\"",
                           gbnf_literal("<invoke name=\"" + t.name + "\">\n"), seq);
        break;
      }
      case F::kDeepSeekV32: {
        std::string seq;
        if (!xml_params(t, i, dsml_key, "</｜DSML｜parameter>\n", &g, &seq, error)) return false;
        body = fmt::format("{} {} \"</｜DSML｜invoke>\\n\"",
                           gbnf_literal("<｜DSML｜invoke name=\"" + t.name + "\">\n"), seq);
        break;
      }
      case F::kLfm2: {
        std::string seq;
        if (!kwargs_chain(t, i, ", ", "=", false, json_kwarg_value, &g, &seq, error)) return false;
        body = fmt::format("{} {} \")\"", gbnf_literal(t.name + "("), seq);
        break;
      }
      case F::kDeepSeek:  // V3.1's name<sep>args, or R1's fenced JSON
        body = fmt::format(
            "\"<｜tool▁call▁begin｜>\" ({} {} | {} {} \"\\n```\") \"<｜tool▁call▁end｜>\"",
            gbnf_literal(t.name + "<｜tool▁sep｜>"), t.args,
            gbnf_literal("function<｜tool▁sep｜>" + t.name + "\n```json\n"), t.args);
        break;
      case F::kKimi:
        body = fmt::format("\"\\n\"? {} [0-9]{{1,3}} \"<|tool_call_argument_begin|>\" {} "
                           "\"<|tool_call_end|>\"",
                           gbnf_literal("<|tool_call_begin|>functions." + t.name + ":"), t.args);
        break;
      case F::kFunctionary:
        body = fmt::format("{} {} \"</function>\"", gbnf_literal("<function=" + t.name + ">"),
                           t.args);
        break;
      case F::kFunctionaryV32:
        body = fmt::format("{} {}", gbnf_literal(t.name + "\n"), t.args);
        break;
      case F::kGemma4: {  // keys sorted, as the template writes them
        std::string seq;
        if (!kwargs_chain(t, i, ",", ":", true, gemma4_kwarg_value, &g, &seq, error)) {
          return false;
        }
        body = fmt::format("{} {} \"}}<tool_call|>\"",
                           gbnf_literal("<|tool_call>call:" + t.name + "{"), seq);
        break;
      }
      default:  // Harmony: from " to=functions." on; <|call|> ends the reply
        body = fmt::format("{} (\" <|constrain|>json\" | \"<|channel|>commentary\" "
                           "(\" json\" | \" <|constrain|>json\")) \"<|message|>\" {}",
                           gbnf_literal(t.name), t.args);
        break;
    }
    g += fmt::format("{} ::= {}\n", t.rule, body);
  }
  g += any_call(tools, "folio-call");
  switch (format) {
    case F::kMistral: {
      std::string named;
      for (size_t i = 0; i < tools.size(); ++i) {
        named += fmt::format("{}folio-named{}", named.empty() ? "" : " | ", i);
      }
      g += fmt::format("folio-named ::= {}\n", named);
      trigger = "[TOOL_CALLS]";
      root = fmt::format("\"[TOOL_CALLS]\" (\"[\" {} \"]\" | {})",
                         repeated("folio-call", "\",\" \" \"?", many),
                         repeated("folio-named", "\"[TOOL_CALLS]\"", many));
      break;
    }
    case F::kNemotron:
      trigger = "<TOOLCALL>";
      root = fmt::format("\"<TOOLCALL>[\" {} \"]</TOOLCALL>\"",
                         repeated("folio-call", "\", \"", many));
      break;
    case F::kGranite:
      trigger = "<|tool_call|>";
      root = fmt::format("\"<|tool_call|>[\" {} \"]\"", repeated("folio-call", "\", \"", many));
      break;
    case F::kPhi4Mini:
      trigger = "<|tool_call|>";
      root = fmt::format("\"<|tool_call|>[\" {} \"]<|/tool_call|>\"",
                         repeated("folio-call", "\", \"", many));
      break;
    case F::kCommand:
      trigger = "<|START_ACTION|>";
      root = fmt::format("\"<|START_ACTION|>[\" \"\\n\"? {} \"\\n\"? \"]<|END_ACTION|>\"",
                         repeated("folio-call", "\",\" \"\\n\"?", many));
      break;
    case F::kGlm:
      trigger = "<tool_call>";
      root = repeated("folio-call", "\"\\n\"?", many);
      break;
    case F::kMiniMax:
      trigger = "<minimax:tool_call>";
      root = fmt::format("\"<minimax:tool_call>\\n\" {} \"</minimax:tool_call>\"",
                         many ? "folio-call+" : "folio-call");
      break;
    case F::kLfm2:
      trigger = "<|tool_call_start|>";
      root = fmt::format("\"<|tool_call_start|>[\" {} \"]<|tool_call_end|>\"",
                         repeated("folio-call", "\", \"", many));
      break;
    case F::kDeepSeek:
      trigger = "<｜tool▁calls▁begin｜>";
      root = fmt::format("\"<｜tool▁calls▁begin｜>\" {} \"<｜tool▁calls▁end｜>\"",
                         many ? "folio-call+" : "folio-call");
      break;
    case F::kKimi:
      trigger = "<|tool_calls_section_begin|>";
      root = fmt::format("\"<|tool_calls_section_begin|>\" {} \"<|tool_calls_section_end|>\"",
                         many ? "folio-call+" : "folio-call");
      break;
    case F::kFunctionary:
      trigger = "<function=";
      root = many ? "folio-call+" : "folio-call";
      break;
    case F::kDeepSeekV32:
      trigger = "<｜DSML｜function_calls>";
      root = fmt::format("\"<｜DSML｜function_calls>\\n\" {} \"</｜DSML｜function_calls>\"",
                         many ? "folio-call+" : "folio-call");
      break;
    case F::kGemma4:
      trigger = "<|tool_call>";
      g += kGemma4ValueGbnf;
      root = many ? "folio-call+" : "folio-call";
      break;
    case F::kFunctionaryV32:
      // No trigger: the reply opens with its recipient, "all" (a message to
      // the user, free of ">>>") or the function.
      g += "folio-all-text ::= ([^>] | \">\" [^>] | \">>\" [^>])*\n";
      root = fmt::format("(\"all\\n\" folio-all-text \">>>\")? {}",
                         repeated("folio-call", "\">>>\"", many));
      break;
    default:
      trigger = " to=functions.";
      root = "\" to=functions.\" folio-call";
      break;
  }
  g += "root ::= " + root + "\n";
  out->gbnf = std::move(g);
  out->triggers.clear();
  if (!trigger.empty()) out->triggers.push_back(trigger);
  return true;
}

}  // namespace folio::server
