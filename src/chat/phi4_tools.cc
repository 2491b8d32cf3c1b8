#include "chat/phi4_tools.h"

#include "jinja/json.h"

namespace folio::chat {

namespace {

// JSON as Python's json.dumps writes it (", " and ": "); a value nested too
// deep for that gets nlohmann's compact form.
std::string phi4_dump(const Json& j) {
  try {
    return jinja::dump_json(jinja::value_from_json(j), jinja::JsonDumpOptions{});
  } catch (const std::exception&) {
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

const Json& phi4_function_of(const Json& v) {
  if (v.is_object()) {
    auto f = v.find("function");
    if (f != v.end() && f->is_object()) return *f;
  }
  return v;
}

}  // namespace

Json phi4_tool_messages(const Json& messages, const Json& tools) {
  if (!messages.is_array() || !tools.is_array() || tools.empty()) return messages;
  Json out = Json::array();
  for (const Json& m : messages) {
    Json msg = m;
    if (m.is_object() && m.value("role", "") == "assistant" && m.contains("tool_calls") &&
        m["tool_calls"].is_array() && !m["tool_calls"].empty()) {
      Json calls = Json::array();
      for (const Json& c : m["tool_calls"]) {
        const Json& f = phi4_function_of(c);
        Json call = Json::object();
        call["name"] = f.is_object() ? f.value("name", "") : "";
        Json args = f.is_object() && f.contains("arguments") ? f["arguments"] : Json::object();
        if (args.is_string()) {
          Json parsed = Json::parse(args.get<std::string>(), nullptr, /*allow_exceptions=*/false);
          if (!parsed.is_discarded()) args = std::move(parsed);
        }
        call["arguments"] = std::move(args);
        calls.push_back(std::move(call));
      }
      const std::string text = m.contains("content") && m["content"].is_string()
                                   ? m["content"].get<std::string>()
                                   : "";
      msg.erase("tool_calls");
      msg["content"] = text + "<|tool_call|>" + phi4_dump(calls) + "<|/tool_call|>";
    }
    out.push_back(std::move(msg));
  }
  Json functions = Json::array();
  for (const Json& t : tools) {
    const Json& f = phi4_function_of(t);
    if (!f.is_object()) continue;
    Json d = Json::object();
    d["name"] = f.value("name", "");
    if (f.contains("description")) d["description"] = f["description"];
    d["parameters"] = f.contains("parameters") ? f["parameters"] : Json::object();
    functions.push_back(std::move(d));
  }
  const std::string text = phi4_dump(functions);
  if (!out.empty() && out[0].is_object() && out[0].value("role", "") == "system" &&
      out[0].contains("content") && out[0]["content"].is_string()) {
    out[0]["tools"] = text;
  } else {
    out.insert(out.begin(), Json{{"role", "system"},
                                 {"content", "You are a helpful assistant with some tools."},
                                 {"tools", text}});
  }
  return out;
}

}  // namespace folio::chat
