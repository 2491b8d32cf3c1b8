#include "chat/generic_tools.h"

#include <fmt/format.h>

#include <map>

#include "jinja/json.h"

namespace folio::chat {

namespace {

// The function object of a tool definition ({"type": "function",
// "function": {...}} or the function itself).
const Json& generic_function_of(const Json& tool) {
  if (tool.is_object()) {
    auto f = tool.find("function");
    if (f != tool.end() && f->is_object()) return *f;
  }
  return tool;
}

std::string generic_tool_name(const Json& tool) {
  const Json& f = generic_function_of(tool);
  if (!f.is_object()) return "";
  auto n = f.find("name");
  return n != f.end() && n->is_string() ? n->get<std::string>() : "";
}

// JSON as Python's json.dumps writes it (", " and ": "), the way templates'
// tojson shows JSON to the model; a value nested too deep for that gets
// nlohmann's compact form.
std::string generic_dump(const Json& j) {
  try {
    return jinja::dump_json(jinja::value_from_json(j), jinja::JsonDumpOptions{});
  } catch (const std::exception&) {
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

// An earlier call as the model writes one: {"name", "arguments", "id"?}.
Json generic_call_object(const Json& call) {
  const Json& f = call.is_object() && call.contains("function") ? call["function"] : call;
  Json out = Json::object();
  out["name"] = f.is_object() ? f.value("name", "") : "";
  Json args = f.is_object() && f.contains("arguments") ? f["arguments"] : Json::object();
  if (args.is_string()) {
    Json parsed = Json::parse(args.get<std::string>(), nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded()) args = std::move(parsed);
  }
  out["arguments"] = std::move(args);
  if (call.is_object() && call.contains("id") && call["id"].is_string()) out["id"] = call["id"];
  return out;
}

bool generic_is_text(const Json& content) {
  return content.is_string() || content.is_null();
}

std::string generic_text_of(const Json& content) {
  return content.is_string() ? content.get<std::string>() : "";
}

// The call syntax the reply uses, with placeholders.
std::string generic_call_example(const GenericToolOptions& o) {
  const std::string name = o.only_tool.empty() ? "<tool name>" : o.only_tool;
  const std::string call =
      fmt::format("{{\"name\": \"{}\", \"arguments\": {{<arguments>}}}}", name);
  return o.parallel ? fmt::format("{{\"tool_calls\": [{}, ...]}}", call)
                    : fmt::format("{{\"tool_call\": {}}}", call);
}

}  // namespace

std::string generic_tools_text(const Json& tools, const GenericToolOptions& o) {
  std::string s = "You can call these tools:\n";
  if (tools.is_array()) {
    for (const Json& t : tools) {
      const Json& f = generic_function_of(t);
      if (!f.is_object()) continue;
      Json d = Json::object();
      d["name"] = f.value("name", "");
      if (f.contains("description")) d["description"] = f["description"];
      d["parameters"] = f.contains("parameters") ? f["parameters"] : Json::object();
      s += generic_dump(d);
      s += '\n';
    }
  }
  s += "\nAnswer with one JSON object";
  if (o.allow_response) {
    s += fmt::format(": {} to call {}, or {{\"response\": \"<your answer>\"}} to answer the user.",
                     generic_call_example(o), o.parallel ? "tools" : "a tool");
  } else if (!o.only_tool.empty()) {
    s += fmt::format(" that calls {}: {}.", o.only_tool, generic_call_example(o));
  } else {
    s += fmt::format(" that calls {}: {}.", o.parallel ? "tools" : "a tool",
                     generic_call_example(o));
  }
  s += "\nTool results come back as {\"tool_response\": {\"tool\": \"<tool name>\", "
       "\"content\": ...}}.";
  return s;
}

Json generic_tool_messages(const Json& messages, const Json& tools, const GenericToolOptions& o,
                           bool system_in_user) {
  Json out = Json::array();
  if (!messages.is_array()) return out;
  std::map<std::string, std::string> call_names;  // call id -> tool name
  for (const Json& m : messages) {
    if (!m.is_object()) {
      out.push_back(m);
      continue;
    }
    const std::string role = m.value("role", "");
    Json msg = m;
    if (role == "assistant" && m.contains("tool_calls") && m["tool_calls"].is_array() &&
        !m["tool_calls"].empty()) {
      Json calls = Json::array();
      for (const Json& c : m["tool_calls"]) {
        Json call = generic_call_object(c);
        if (call.contains("id")) call_names[call["id"].get<std::string>()] = call["name"];
        calls.push_back(std::move(call));
      }
      Json written = !o.parallel && calls.size() == 1 ? Json{{"tool_call", calls[0]}}
                                                      : Json{{"tool_calls", std::move(calls)}};
      msg.erase("tool_calls");
      msg["content"] = generic_dump(written);
    } else if (role == "tool") {
      Json r = Json::object();
      std::string name =
          m.contains("name") && m["name"].is_string() ? m["name"].get<std::string>() : "";
      const std::string id = m.contains("tool_call_id") && m["tool_call_id"].is_string()
                                 ? m["tool_call_id"].get<std::string>()
                                 : "";
      if (name.empty() && call_names.count(id)) name = call_names[id];
      r["tool"] = name;
      if (!id.empty()) r["tool_call_id"] = id;
      r["content"] = m.contains("content") ? m["content"] : Json("");
      msg = Json{{"role", "user"}, {"content", generic_dump(Json{{"tool_response", r}})}};
    }
    // Consecutive user messages with text content become one.
    if (msg.value("role", "") == "user" && !out.empty() && out.back().is_object() &&
        out.back().value("role", "") == "user" && generic_is_text(out.back()["content"]) &&
        generic_is_text(msg["content"])) {
      out.back()["content"] =
          generic_text_of(out.back()["content"]) + "\n\n" + generic_text_of(msg["content"]);
      continue;
    }
    out.push_back(std::move(msg));
  }
  const std::string text = generic_tools_text(tools, o);
  if (!system_in_user) {
    if (!out.empty() && out[0].is_object() && out[0].value("role", "") == "system" &&
        generic_is_text(out[0]["content"])) {
      const std::string sys = generic_text_of(out[0]["content"]);
      out[0]["content"] = sys.empty() ? text : sys + "\n\n" + text;
    } else {
      out.insert(out.begin(), Json{{"role", "system"}, {"content", text}});
    }
    return out;
  }
  for (Json& m : out) {
    if (m.is_object() && m.value("role", "") == "user" && generic_is_text(m["content"])) {
      m["content"] = text + "\n\n" + generic_text_of(m["content"]);
      return out;
    }
  }
  out.push_back(Json{{"role", "user"}, {"content", text}});
  return out;
}

Result<Json> generic_reply_schema(const Json& tools, const GenericToolOptions& o) {
  Json calls = Json::array();
  if (tools.is_array()) {
    for (const Json& t : tools) {
      const std::string name = generic_tool_name(t);
      if (name.empty() || (!o.only_tool.empty() && name != o.only_tool)) continue;
      const Json& f = generic_function_of(t);
      Json params = f.contains("parameters") && f["parameters"].is_object()
                        ? f["parameters"]
                        : Json{{"type", "object"}};
      Json props = Json::object();
      props["name"] = Json{{"const", name}};
      props["arguments"] = std::move(params);
      calls.push_back(Json{{"type", "object"},
                           {"properties", std::move(props)},
                           {"required", Json::array({"name", "arguments"})},
                           {"additionalProperties", false}});
    }
  }
  if (calls.empty()) {
    return invalid_argument("no tool named '{}'", o.only_tool.empty() ? "" : o.only_tool);
  }
  Json call = calls.size() == 1 ? calls[0] : Json{{"anyOf", std::move(calls)}};
  Json reply;
  if (o.parallel) {
    reply = Json{{"type", "object"},
                 {"properties",
                  Json{{"tool_calls",
                        Json{{"type", "array"}, {"items", std::move(call)}, {"minItems", 1}}}}},
                 {"required", Json::array({"tool_calls"})},
                 {"additionalProperties", false}};
  } else {
    reply = Json{{"type", "object"},
                 {"properties", Json{{"tool_call", std::move(call)}}},
                 {"required", Json::array({"tool_call"})},
                 {"additionalProperties", false}};
  }
  if (!o.allow_response) return reply;
  Json response = Json{{"type", "object"},
                       {"properties", Json{{"response", Json{{"type", "string"}}}}},
                       {"required", Json::array({"response"})},
                       {"additionalProperties", false}};
  return Json{{"anyOf", Json::array({std::move(reply), std::move(response)})}};
}

}  // namespace folio::chat
