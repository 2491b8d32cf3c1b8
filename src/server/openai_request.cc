#include "server/openai_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <limits>

#include "core/json_brackets.h"

namespace folio::server {

namespace {

// A JSON value for an error message, cut to a readable length.
std::string show(const Json& v) {
  std::string s = dump_json(v);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

// Typed access to the fields of one request object. Each reader leaves the
// output untouched when the field is absent or null, and returns false with
// *error set when it is present but wrong.
class Fields {
 public:
  Fields(const Json& body, ApiError* error) : body_(body), error_(error) {}

  const Json* get(const char* name) const {
    auto it = body_.find(name);
    if (it == body_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  bool fail(const char* name, std::string message) {
    *error_ = bad_request(std::move(message), name);
    return false;
  }

  bool read_bool(const char* name, bool* out) {
    const Json* v = get(name);
    if (v == nullptr) return true;
    if (!v->is_boolean())
      return fail(name, fmt::format("'{}' must be a boolean, got {}", name, show(*v)));
    *out = v->get<bool>();
    return true;
  }

  bool read_int(const char* name, int64_t* out, int64_t lo, int64_t hi) {
    const Json* v = get(name);
    if (v == nullptr) return true;
    int64_t x = 0;
    auto out_of_range = [&] {
      return fail(name, fmt::format("'{}' must be in [{}, {}], got {}", name, lo, hi, show(*v)));
    };
    if (v->is_number_unsigned()) {
      if (v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return out_of_range();
      x = static_cast<int64_t>(v->get<uint64_t>());
    } else if (v->is_number_integer()) {
      x = v->get<int64_t>();
    } else if (v->is_number_float() && std::isfinite(v->get<double>()) &&
               v->get<double>() == std::floor(v->get<double>()) &&
               std::fabs(v->get<double>()) < 9.0e15) {
      x = static_cast<int64_t>(v->get<double>());
    } else {
      return fail(name, fmt::format("'{}' must be an integer, got {}", name, show(*v)));
    }
    if (x < lo || x > hi) return out_of_range();
    *out = x;
    return true;
  }

  template <typename T>
  bool read_int_as(const char* name, T* out, int64_t lo, int64_t hi) {
    int64_t x = *out;
    if (!read_int(name, &x, lo, hi)) return false;
    *out = static_cast<T>(x);
    return true;
  }

  // A finite number in [lo, hi] (lo excluded when lo_open).
  bool read_number(const char* name, float* out, double lo, double hi, bool lo_open = false) {
    const Json* v = get(name);
    if (v == nullptr) return true;
    if (!v->is_number()) {
      return fail(name, fmt::format("'{}' must be a number, got {}", name, show(*v)));
    }
    const double x = v->get<double>();
    const bool ok = std::isfinite(x) && (lo_open ? x > lo : x >= lo) && x <= hi;
    if (!ok) {
      const std::string range = std::isinf(hi)
                                    ? fmt::format("{} {}", lo_open ? ">" : ">=", lo)
                                    : fmt::format("in {}{}, {}]", lo_open ? "(" : "[", lo, hi);
      return fail(name, fmt::format("'{}' must be a number {}, got {}", name, range, show(*v)));
    }
    *out = static_cast<float>(x);
    return true;
  }

  bool read_string(const char* name, std::string* out) {
    const Json* v = get(name);
    if (v == nullptr) return true;
    if (!v->is_string())
      return fail(name, fmt::format("'{}' must be a string, got {}", name, show(*v)));
    *out = v->get<std::string>();
    return true;
  }

 private:
  const Json& body_;
  ApiError* error_;
};

bool is_token_array(const Json& v) {
  if (!v.is_array() || v.empty()) return false;
  for (const Json& e : v) {
    if (!e.is_number_integer()) return false;
  }
  return true;
}

bool read_token_array(const Json& v, std::vector<int32_t>* out) {
  for (const Json& e : v) {
    const int64_t t = e.get<int64_t>();
    if (e.is_number_unsigned() && e.get<uint64_t>() > INT32_MAX) return false;
    if (t < 0 || t > INT32_MAX) return false;
    out->push_back(static_cast<int32_t>(t));
  }
  return true;
}

// prompt: a string, a list of strings, a list of token ids, or a list of
// lists of token ids.
bool parse_prompts(Fields& f, OpenAiRequest* out) {
  const Json* p = f.get("prompt");
  if (p == nullptr) return f.fail("prompt", "'prompt' is required");
  auto add_text = [&](const Json& s) {
    PromptInput in;
    in.text = s.get<std::string>();
    out->prompts.push_back(std::move(in));
  };
  auto add_tokens = [&](const Json& a) {
    PromptInput in;
    in.is_tokens = true;
    if (!read_token_array(a, &in.tokens)) return false;
    out->prompts.push_back(std::move(in));
    return true;
  };
  constexpr const char* kShapes =
      "'prompt' must be a string, a list of strings, a list of token ids or a list of lists of "
      "token ids";
  if (p->is_string()) {
    add_text(*p);
  } else if (!p->is_array() || p->empty()) {
    return f.fail("prompt", kShapes);
  } else if (is_token_array(*p)) {
    if (!add_tokens(*p)) return f.fail("prompt", "'prompt' token ids must be in [0, 2^31)");
  } else {
    if (p->size() > static_cast<size_t>(kMaxPrompts)) {
      return f.fail("prompt",
                    fmt::format("at most {} prompts per request, got {}", kMaxPrompts, p->size()));
    }
    for (const Json& e : *p) {
      if (e.is_string()) {
        add_text(e);
      } else if (is_token_array(e)) {
        if (!add_tokens(e)) return f.fail("prompt", "'prompt' token ids must be in [0, 2^31)");
      } else {
        return f.fail("prompt", kShapes);
      }
    }
  }
  return true;
}

bool known_role(const std::string& r) {
  return r == "system" || r == "developer" || r == "user" || r == "assistant" || r == "tool" ||
         r == "function";
}

// Roles whose messages must carry content (OpenAI's schema; vLLM validates
// the same). An assistant message may leave it null when it makes tool
// calls, and so may the legacy function role; a template would otherwise
// render a null content as the text "None".
bool content_required(const std::string& r) {
  return r == "system" || r == "developer" || r == "user" || r == "tool";
}

// Validates chat messages and normalises them for the template: content
// part lists become one string (text parts joined by "\n"), "developer"
// becomes "system", tool-call arguments sent as JSON strings become objects
// (what templates iterate over).
bool parse_messages(Fields& f, OpenAiRequest* out) {
  const Json* m = f.get("messages");
  if (m == nullptr) return f.fail("messages", "'messages' is required");
  if (!m->is_array() || m->empty()) {
    return f.fail("messages", "'messages' must be a non-empty list of message objects");
  }
  out->messages = Json::array();
  for (size_t i = 0; i < m->size(); ++i) {
    const Json& msg = (*m)[i];
    const std::string where = fmt::format("messages[{}]", i);
    if (!msg.is_object()) return f.fail("messages", where + " must be an object");
    auto role = msg.find("role");
    if (role == msg.end() || !role->is_string()) {
      return f.fail("messages", where + ".role must be a string");
    }
    const std::string r = role->get<std::string>();
    if (!known_role(r)) {
      return f.fail("messages", fmt::format("{}.role '{}' is not one of system, developer, user, "
                                            "assistant, tool, function",
                                            where, r));
    }
    Json norm = msg;
    norm["role"] = r == "developer" ? "system" : r;
    auto content = msg.find("content");
    if (content == msg.end() || content->is_null()) {
      if (content_required(r)) {
        const char* what = content == msg.end() ? "but it is missing" : "got null";
        return f.fail("messages", fmt::format("{}.content must be a string or a list of parts in "
                                              "a '{}' message, {}",
                                              where, r, what));
      }
      norm["content"] = nullptr;
    } else if (content->is_array()) {
      std::string text;
      for (size_t k = 0; k < content->size(); ++k) {
        const Json& part = (*content)[k];
        auto type = part.is_object() ? part.find("type") : part.end();
        if (!part.is_object() || type == part.end() || !type->is_string()) {
          return f.fail("messages",
                        fmt::format("{}.content[{}] must be an object with a 'type'", where, k));
        }
        if (type->get<std::string>() != "text") {
          return f.fail("messages", fmt::format("{}.content[{}]: content part type '{}' is not "
                                                "supported (text only)",
                                                where, k, type->get<std::string>()));
        }
        auto t = part.find("text");
        if (t == part.end() || !t->is_string()) {
          return f.fail("messages", fmt::format("{}.content[{}].text must be a string", where, k));
        }
        if (k > 0) text += '\n';
        text += t->get<std::string>();
      }
      norm["content"] = std::move(text);
    } else if (!content->is_string()) {
      return f.fail("messages", where + ".content must be a string, a list of parts or null");
    }
    auto calls = msg.find("tool_calls");
    if (calls != msg.end() && !calls->is_null()) {
      if (!calls->is_array()) return f.fail("messages", where + ".tool_calls must be a list");
      for (Json& call : norm["tool_calls"]) {
        if (!call.is_object()) return f.fail("messages", where + ".tool_calls[] must be objects");
        auto fn = call.find("function");
        if (fn == call.end() || !fn->is_object()) continue;
        auto args = fn->find("arguments");
        if (args != fn->end() && args->is_string()) {
          Json parsed = Json::parse(args->get<std::string>(), nullptr, false);
          if (!parsed.is_discarded() && parsed.is_object()) *args = std::move(parsed);
        }
      }
    } else if (calls != msg.end()) {
      norm.erase("tool_calls");
    }
    // Earlier reasoning (the reasoning_content a response carried): text
    // the template renders where it reads reasoning (chat/chat_format.h).
    auto reasoning = msg.find("reasoning_content");
    if (reasoning != msg.end() && reasoning->is_null()) {
      norm.erase("reasoning_content");
    } else if (reasoning != msg.end() && !reasoning->is_string()) {
      return f.fail("messages", where + ".reasoning_content must be a string or null");
    }
    out->messages.push_back(std::move(norm));
  }
  return true;
}

bool parse_stop(Fields& f, SamplingParams* p) {
  const Json* s = f.get("stop");
  if (s == nullptr) return true;
  p->stop.clear();
  if (s->is_string()) {
    if (!s->get<std::string>().empty()) p->stop.push_back(s->get<std::string>());
    return true;
  }
  if (!s->is_array()) return f.fail("stop", "'stop' must be a string or a list of strings");
  for (const Json& e : *s) {
    if (!e.is_string()) return f.fail("stop", "'stop' must be a string or a list of strings");
    if (!e.get<std::string>().empty()) p->stop.push_back(e.get<std::string>());
  }
  if (p->stop.size() > kMaxStopStrings) {
    return f.fail("stop",
                  fmt::format("at most {} stop strings, got {}", kMaxStopStrings, p->stop.size()));
  }
  return true;
}

bool parse_logit_bias(Fields& f, SamplingParams* p) {
  const Json* b = f.get("logit_bias");
  if (b == nullptr) return true;
  if (!b->is_object()) {
    return f.fail("logit_bias", "'logit_bias' must be an object mapping token ids to biases");
  }
  for (const auto& [key, value] : b->items()) {
    int64_t id = -1;
    bool digits = !key.empty() && key.size() <= 10;
    for (char c : key) digits = digits && c >= '0' && c <= '9';
    if (digits) id = std::stoll(key);
    if (!digits || id > INT32_MAX) {
      return f.fail("logit_bias",
                    fmt::format("'logit_bias' key '{}' is not a token id", key.substr(0, 40)));
    }
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < -100 ||
        value.get<double>() > 100) {
      return f.fail("logit_bias", fmt::format("'logit_bias' for token {} must be a number in "
                                              "[-100, 100], got {}",
                                              id, show(value)));
    }
    p->logit_bias[static_cast<int32_t>(id)] = value.get<float>();
  }
  return true;
}

bool parse_logprobs(Fields& f, ApiKind kind, OpenAiRequest* out) {
  if (kind == ApiKind::kCompletion) {
    const Json* l = f.get("logprobs");
    if (l != nullptr && l->is_boolean()) {
      return f.fail("logprobs", "'logprobs' must be an integer (the number of alternatives)");
    }
    int64_t n = -1;
    if (!f.read_int("logprobs", &n, 0, kMaxTopLogprobs)) return false;
    out->logprobs = static_cast<int>(n);
  } else {
    bool on = false;
    int64_t top = 0;
    if (!f.read_bool("logprobs", &on)) return false;
    if (!f.read_int("top_logprobs", &top, 0, kMaxTopLogprobs)) return false;
    if (f.get("top_logprobs") != nullptr && !on) {
      return f.fail("top_logprobs", "'top_logprobs' needs 'logprobs' to be true");
    }
    out->logprobs = on ? static_cast<int>(top) : -1;
  }
  out->params.logprobs = out->logprobs >= 0;
  out->params.top_logprobs = out->logprobs > 0 ? out->logprobs : 0;
  return true;
}

bool parse_sampling(Fields& f, ApiKind kind, OpenAiRequest* out) {
  SamplingParams& p = out->params;
  // OpenAI's defaults, not llama.cpp's.
  p.temperature = 1.0f;
  p.top_p = 1.0f;
  p.top_k = 0;
  p.min_p = 0.0f;
  p.max_tokens = kind == ApiKind::kCompletion ? 16 : -1;
  if (!f.read_int_as("max_tokens", &p.max_tokens, 0, INT32_MAX)) return false;
  if (!f.read_int_as("max_completion_tokens", &p.max_tokens, 0, INT32_MAX)) return false;
  if (!f.read_number("temperature", &p.temperature, 0.0, INFINITY)) return false;
  if (!f.read_number("top_p", &p.top_p, 0.0, 1.0, /*lo_open=*/true)) return false;
  int64_t top_k = 0;
  if (!f.read_int("top_k", &top_k, -1, INT32_MAX)) return false;
  p.top_k = top_k < 0 ? 0 : static_cast<int32_t>(top_k);  // -1 and 0 are "off"
  if (!f.read_number("min_p", &p.min_p, 0.0, 1.0)) return false;
  if (!f.read_number("presence_penalty", &p.presence_penalty, -2.0, 2.0)) return false;
  if (!f.read_number("frequency_penalty", &p.frequency_penalty, -2.0, 2.0)) return false;
  if (!f.read_number("repeat_penalty", &p.repetition_penalty, 0.0, INFINITY, true)) return false;
  if (!f.read_number("repetition_penalty", &p.repetition_penalty, 0.0, INFINITY, true)) {
    return false;
  }
  if (!f.read_int_as("repeat_last_n", &p.penalty_last_n, -1, INT32_MAX)) return false;
  int64_t seed = -1;
  const bool has_seed = f.get("seed") != nullptr;
  if (!f.read_int("seed", &seed, INT64_MIN, INT64_MAX)) return false;
  if (has_seed && seed != -1) p.seed = static_cast<uint64_t>(seed);  // -1: random (llama.cpp)
  if (!parse_stop(f, &p)) return false;
  if (!parse_logit_bias(f, &p)) return false;
  return parse_logprobs(f, kind, out);
}

}  // namespace

bool parse_json_body(const std::string& body, Json* out, ApiError* error) {
  // Copying, comparing and rendering JSON recurse per level: bound the depth
  // before the parser builds anything.
  if (walk_json_brackets(body, [](size_t, int depth) { return depth <= kMaxJsonDepth; }) !=
      std::string_view::npos) {
    *error = bad_request(
        fmt::format("the request body nests JSON deeper than {} levels", kMaxJsonDepth));
    return false;
  }
  // The parser's messages quote the token at fault, which may be most of
  // the body (a 1 MB number): keep them readable.
  auto what = [](const Json::exception& e) {
    std::string w = e.what();
    if (w.size() > 200) w = w.substr(0, 197) + "...";
    return w;
  };
  try {
    *out = Json::parse(body);
  } catch (const Json::parse_error& e) {
    *error = bad_request(fmt::format("malformed JSON in the request body: {}", what(e)));
    return false;
  } catch (const Json::exception& e) {
    // Input the grammar accepts but a value cannot hold, e.g. a number
    // beyond a double's range (1e309: out_of_range 406). Any other
    // exception of the parser is the body's fault too.
    *error = bad_request(fmt::format("invalid JSON in the request body: {}", what(e)));
    return false;
  }
  if (!out->is_object()) {
    *error = bad_request("the request body must be a JSON object");
    return false;
  }
  return true;
}

namespace {

// tools: a list of {"type": "function", "function": {"name": N,
// "description"?: string, "parameters"?: object, "strict"?: bool}}, N a
// non-empty name made of letters, digits, '_', '-' and '.', at most 64
// characters, each name once.
bool validate_tools(Fields& f, const Json& tools) {
  std::vector<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    const auto bad = [&](const std::string& what) {
      return f.fail("tools", fmt::format("tools[{}] {}", i, what));
    };
    if (!t.is_object())
      return bad("must be an object {\"type\": \"function\", \"function\": {...}}");
    if (t.contains("type") && t["type"] != "function")
      return bad("has a 'type' other than 'function'");
    auto fn = t.find("function");
    if (fn == t.end() || !fn->is_object()) return bad("has no 'function' object");
    auto name = fn->find("name");
    if (name == fn->end() || !name->is_string() || name->get<std::string>().empty()) {
      return bad("has no function 'name'");
    }
    const std::string n = name->get<std::string>();
    const bool name_ok =
        n.size() <= 64 && std::all_of(n.begin(), n.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
        });
    if (!name_ok) {
      return bad("has a function name that is not 1-64 letters, digits, '_', '-' or '.'");
    }
    if (std::find(names.begin(), names.end(), n) != names.end()) {
      return bad(fmt::format("repeats the function name '{}'", n));
    }
    names.push_back(n);
    if (auto d = fn->find("description"); d != fn->end() && !d->is_string() && !d->is_null()) {
      return bad("has a 'description' that is not a string");
    }
    if (auto p = fn->find("parameters"); p != fn->end() && !p->is_object()) {
      return bad("has 'parameters' that are not a JSON schema object");
    }
    if (auto s = fn->find("strict"); s != fn->end() && !s->is_boolean() && !s->is_null()) {
      return bad("has a 'strict' that is not a boolean");
    }
  }
  return true;
}

// tool_choice: "none" | "auto" | "required" | {"type": "function",
// "function": {"name": N}} with N one of the tools; parallel_tool_calls.
bool parse_tool_choice(Fields& f, OpenAiRequest* out) {
  if (!f.read_bool("parallel_tool_calls", &out->parallel_tool_calls)) return false;
  const Json* c = f.get("tool_choice");
  if (c == nullptr) return true;
  ToolChoice& tc = out->tool_choice;
  if (c->is_string()) {
    const std::string mode = c->get<std::string>();
    if (mode == "none") {
      tc.mode = ToolChoiceMode::kNone;
    } else if (mode == "auto") {
      tc.mode = ToolChoiceMode::kAuto;
    } else if (mode == "required") {
      tc.mode = ToolChoiceMode::kRequired;
    } else {
      return f.fail("tool_choice", fmt::format("'tool_choice' must be 'none', 'auto', 'required' "
                                               "or a function, got '{}'",
                                               mode));
    }
  } else if (c->is_object()) {
    auto type = c->find("type");
    auto fn = c->find("function");
    if (type == c->end() || *type != "function" || fn == c->end() || !fn->is_object() ||
        !fn->contains("name") || !(*fn)["name"].is_string()) {
      return f.fail("tool_choice", "'tool_choice' as an object must be {\"type\": \"function\", "
                                   "\"function\": {\"name\": ...}}");
    }
    tc.mode = ToolChoiceMode::kNamed;
    tc.name = (*fn)["name"].get<std::string>();
  } else {
    return f.fail("tool_choice", "'tool_choice' must be a string or an object");
  }
  if (tc.mode == ToolChoiceMode::kNone) {
    out->tools = nullptr;  // the model is not told about tools it may not call
    return true;
  }
  const bool has_tools = out->tools.is_array() && !out->tools.empty();
  if ((tc.mode == ToolChoiceMode::kRequired || tc.mode == ToolChoiceMode::kNamed) && !has_tools) {
    return f.fail("tool_choice", "'tool_choice' requires a tool call but no 'tools' were given");
  }
  if (tc.mode == ToolChoiceMode::kNamed) {
    for (const Json& t : out->tools) {
      const Json* fn = t.is_object() && t.contains("function") ? &t["function"] : &t;
      if (fn->is_object() && fn->value("name", "") == tc.name) return true;
    }
    return f.fail("tool_choice",
                  fmt::format("'tool_choice' names '{}', which is not one of the tools", tc.name));
  }
  return true;
}

}  // namespace

namespace {

// response_format (OpenAI: text, json_object, json_schema {name, schema,
// strict}), llama-server's json_schema and grammar (GBNF): at most one.
bool parse_output_constraint(Fields& f, OpenAiRequest* out) {
  int given = 0;
  if (const Json* rf = f.get("response_format"); rf != nullptr) {
    if (!rf->is_object() || !rf->contains("type") || !(*rf)["type"].is_string()) {
      return f.fail("response_format", "'response_format' must be an object with a 'type'");
    }
    const std::string type = (*rf)["type"].get<std::string>();
    if (type == "json_object") {
      out->output.kind = OutputConstraint::Kind::kJsonObject;
      ++given;
    } else if (type == "json_schema") {
      auto js = rf->find("json_schema");
      if (js == rf->end() || !js->is_object() || !js->contains("schema")) {
        return f.fail("response_format", "'response_format' of type json_schema needs "
                                         "'json_schema': {\"name\", \"schema\"}");
      }
      const Json& schema = (*js)["schema"];
      if (!schema.is_object() && !schema.is_boolean()) {
        return f.fail("response_format", "'response_format.json_schema.schema' must be a JSON "
                                         "Schema object");
      }
      out->output.kind = OutputConstraint::Kind::kJsonSchema;
      out->output.schema = schema;
      ++given;
    } else if (type != "text") {
      return f.fail("response_format",
                    fmt::format("'response_format' type must be text, json_object or "
                                "json_schema, got '{}'",
                                type));
    }
  }
  if (const Json* js = f.get("json_schema"); js != nullptr) {
    if (!js->is_object() && !js->is_boolean()) {
      return f.fail("json_schema", "'json_schema' must be a JSON Schema object");
    }
    out->output.kind = OutputConstraint::Kind::kJsonSchema;
    out->output.schema = *js;
    ++given;
  }
  if (const Json* g = f.get("grammar"); g != nullptr) {
    if (!g->is_string()) return f.fail("grammar", "'grammar' must be a string (GBNF)");
    if (!g->get<std::string>().empty()) {
      out->output.kind = OutputConstraint::Kind::kGrammar;
      out->output.grammar = g->get<std::string>();
      ++given;
    }
  }
  if (given > 1) {
    return f.fail("response_format",
                  "give at most one of 'response_format' (json), 'json_schema' and 'grammar'");
  }
  if (given == 1 && out->ignore_eos) {
    return f.fail("ignore_eos", "'ignore_eos' cannot be combined with a grammar or JSON output: "
                                "the grammar decides where the output ends");
  }
  return true;
}

}  // namespace

bool parse_openai_request(const Json& body, ApiKind kind, OpenAiRequest* out, ApiError* error) {
  *out = OpenAiRequest{};
  out->kind = kind;
  if (!body.is_object()) {
    *error = bad_request("the request body must be a JSON object");
    return false;
  }
  Fields f(body, error);
  if (!f.read_string("model", &out->model)) return false;
  if (kind == ApiKind::kCompletion) {
    if (!parse_prompts(f, out)) return false;
    if (!f.read_bool("echo", &out->echo)) return false;
    std::string suffix;
    if (!f.read_string("suffix", &suffix)) return false;
    if (!suffix.empty()) return f.fail("suffix", "'suffix' (insertion) is not supported");
  } else {
    if (!parse_messages(f, out)) return false;
    if (const Json* t = f.get("tools"); t != nullptr) {
      if (!t->is_array()) return f.fail("tools", "'tools' must be a list of tool definitions");
      if (!validate_tools(f, *t)) return false;
      out->tools = *t;
    }
    if (!parse_tool_choice(f, out)) return false;
    if (!f.read_bool("add_generation_prompt", &out->add_generation_prompt)) return false;
    if (const Json* k = f.get("chat_template_kwargs"); k != nullptr) {
      if (!k->is_object())
        return f.fail("chat_template_kwargs", "'chat_template_kwargs' must be an object");
      out->chat_template_kwargs = *k;
    }
    if (const Json* e = f.get("reasoning_effort"); e != nullptr) {
      static constexpr const char* kEfforts[] = {"minimal", "low", "medium", "high"};
      const bool known =
          e->is_string() && std::find(std::begin(kEfforts), std::end(kEfforts),
                                      e->get<std::string>()) != std::end(kEfforts);
      if (!known) {
        return f.fail("reasoning_effort",
                      "'reasoning_effort' must be one of minimal, low, medium, high");
      }
      out->reasoning_effort = e->get<std::string>();
    }
    for (const char* name : {"thinking_budget_tokens", "reasoning_budget_tokens"}) {
      if (f.get(name) == nullptr) continue;
      int32_t budget = -1;
      if (!f.read_int_as(name, &budget, -1, INT32_MAX)) return false;
      out->reasoning_budget_tokens = budget;  // the second name wins
    }
  }
  if (!parse_sampling(f, kind, out)) return false;
  if (!f.read_int_as("n", &out->n, 1, kMaxChoices)) return false;
  if (const Json* b = f.get("best_of"); b != nullptr) {
    int64_t best_of = 0;
    if (!f.read_int("best_of", &best_of, 1, kMaxChoices)) return false;
    if (best_of != out->n) return f.fail("best_of", "'best_of' other than n is not supported");
  }
  const size_t total = out->prompts.empty() ? 1 : out->prompts.size();
  if (total * static_cast<size_t>(out->n) > static_cast<size_t>(kMaxChoicesTotal)) {
    return f.fail("n", fmt::format("prompts x n must be at most {}, got {}", kMaxChoicesTotal,
                                   total * out->n));
  }
  if (!f.read_int_as("priority", &out->priority, -1000000, 1000000)) return false;
  if (!f.read_bool("stream", &out->stream)) return false;
  if (const Json* so = f.get("stream_options"); so != nullptr) {
    if (!so->is_object()) return f.fail("stream_options", "'stream_options' must be an object");
    Fields sf(*so, error);
    if (!sf.read_bool("include_usage", &out->include_usage)) {
      error->param = "stream_options";
      return false;
    }
  }
  if (!f.read_bool("ignore_eos", &out->ignore_eos)) return false;
  if (!f.read_bool("speculative", &out->speculative)) return false;
  if (!parse_output_constraint(f, out)) return false;
  if (kind == ApiKind::kCompletion && out->echo && out->logprobs >= 0) {
    return f.fail("echo", "'echo' together with 'logprobs' (prompt logprobs) is not supported");
  }
  if (kind == ApiKind::kChat && out->params.max_tokens == 0) {
    return f.fail("max_tokens", "'max_tokens' must be at least 1");
  }
  return true;
}

}  // namespace folio::server
