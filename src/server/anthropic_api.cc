#include "server/anthropic_api.h"

#include <fmt/format.h>

#include <map>

#include "server/routes.h"
#include "server/text_parts.h"

namespace folio::server {

namespace {

const char* anthropic_text_block_field(const std::string& type) {
  return type == "text" ? "text" : nullptr;
}

// The text of `content`: a string or a list of text blocks.
bool anthropic_text_of(const Json& content, const std::string& where, const char* param,
                       std::string* out, ApiError* err) {
  static constexpr TextPartRule kTextBlocks{anthropic_text_block_field, "text blocks only"};
  return text_of_parts(content, where, param, kTextBlocks, out, err);
}

// One Anthropic message -> chat messages appended to *out.
bool anthropic_message(const Json& msg, size_t i, std::map<std::string, std::string>* names,
                       Json* out, ApiError* err) {
  const std::string where = fmt::format("messages[{}]", i);
  if (!msg.is_object()) {
    *err = bad_request(where + " must be an object", "messages");
    return false;
  }
  auto role = msg.find("role");
  if (role == msg.end() || !role->is_string() || (*role != "user" && *role != "assistant")) {
    *err = bad_request(where + ".role must be 'user' or 'assistant'", "messages");
    return false;
  }
  const bool user = *role == "user";
  auto content = msg.find("content");
  if (content == msg.end() || (!content->is_string() && !content->is_array())) {
    *err = bad_request(where + ".content must be a string or a list of content blocks", "messages");
    return false;
  }
  if (content->is_string()) {
    out->push_back(Json{{"role", *role}, {"content", *content}});
    return true;
  }
  std::string text, thinking;
  bool has_text = false;
  Json calls = Json::array();
  for (size_t k = 0; k < content->size(); ++k) {
    const Json& b = (*content)[k];
    const std::string at = fmt::format("{}.content[{}]", where, k);
    if (!b.is_object() || !b.contains("type") || !b["type"].is_string()) {
      *err = bad_request(at + " must be an object with a 'type'", "messages");
      return false;
    }
    const std::string type = b["type"].get<std::string>();
    auto string_field = [&](const char* f, std::string* v) {
      auto it = b.find(f);
      if (it == b.end() || !it->is_string()) {
        *err = bad_request(fmt::format("{}.{} must be a string", at, f), "messages");
        return false;
      }
      *v = it->get<std::string>();
      return true;
    };
    if (type == "text") {
      std::string t;
      if (!string_field("text", &t)) return false;
      if (has_text) text += '\n';
      text += t;
      has_text = true;
    } else if (type == "tool_use" && !user) {
      std::string id, name;
      if (!string_field("id", &id) || !string_field("name", &name)) return false;
      auto input = b.find("input");
      if (input == b.end() || !input->is_object()) {
        *err = bad_request(at + ".input must be an object", "messages");
        return false;
      }
      (*names)[id] = name;
      calls.push_back(Json{{"id", id},
                           {"type", "function"},
                           {"function", Json{{"name", name}, {"arguments", dump_json(*input)}}}});
    } else if (type == "tool_result" && user) {
      std::string id, result;
      if (!string_field("tool_use_id", &id)) return false;
      if (auto c = b.find("content"); c != b.end() && !c->is_null()) {
        if (!anthropic_text_of(*c, at + ".content", "messages", &result, err)) return false;
      }
      if (auto e = b.find("is_error"); e != b.end() && !e->is_null() && !e->is_boolean()) {
        *err = bad_request(at + ".is_error must be a boolean", "messages");
        return false;
      }
      Json tool = Json{{"role", "tool"}, {"tool_call_id", id}, {"content", std::move(result)}};
      if (auto n = names->find(id); n != names->end()) tool["name"] = n->second;
      out->push_back(std::move(tool));
    } else if (type == "thinking" && !user) {
      std::string t;
      if (!string_field("thinking", &t)) return false;
      if (!thinking.empty()) thinking += '\n';
      thinking += t;
    } else if (type == "redacted_thinking" && !user) {
      // Encrypted by another server: nothing a template can render.
    } else {
      *err = bad_request(fmt::format("{}.type '{}' is not supported in a{} message", at,
                                     type.substr(0, 60), user ? " user" : "n assistant"),
                         "messages");
      return false;
    }
  }
  if (user) {
    if (has_text || content->empty()) out->push_back(Json{{"role", "user"}, {"content", text}});
    return true;
  }
  Json a = Json{{"role", "assistant"}, {"content", has_text ? Json(text) : Json(nullptr)}};
  if (!has_text && calls.empty()) a["content"] = "";
  if (!thinking.empty()) a["reasoning_content"] = std::move(thinking);
  if (!calls.empty()) a["tool_calls"] = std::move(calls);
  out->push_back(std::move(a));
  return true;
}

bool anthropic_tools(const Json& tools, Json* nested, ApiError* err) {
  if (!tools.is_array()) {
    *err = bad_request("tools: must be a list of tool definitions", "tools");
    return false;
  }
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    const std::string where = fmt::format("tools.{}", i);
    if (!t.is_object()) {
      *err = bad_request(where + ": must be an object", "tools");
      return false;
    }
    if (auto type = t.find("type"); type != t.end() && !type->is_null() && *type != "custom") {
      *err = bad_request(fmt::format("{}.type: {} is not supported (custom tools only)", where,
                                     show_json_value(*type)),
                         "tools");
      return false;
    }
    if (!t.contains("name") || !t["name"].is_string() || t["name"].get<std::string>().empty()) {
      *err = bad_request(where + ".name: must be a non-empty string", "tools");
      return false;
    }
    auto schema = t.find("input_schema");
    if (schema == t.end() || !schema->is_object()) {
      *err = bad_request(where + ".input_schema: must be a JSON Schema object", "tools");
      return false;
    }
    Json fn = Json{{"name", t["name"]}};
    if (auto d = t.find("description"); d != t.end() && !d->is_null()) {
      if (!d->is_string()) {
        *err = bad_request(where + ".description: must be a string", "tools");
        return false;
      }
      fn["description"] = *d;
    }
    fn["parameters"] = *schema;
    nested->push_back(Json{{"type", "function"}, {"function", std::move(fn)}});
  }
  return true;
}

bool anthropic_tool_choice(const Json& c, Json* chat, ApiError* err) {
  if (!c.is_object() || !c.contains("type") || !c["type"].is_string()) {
    *err = bad_request("tool_choice: must be an object {\"type\": auto | any | tool | none}",
                       "tool_choice");
    return false;
  }
  const std::string type = c["type"].get<std::string>();
  if (type == "auto") {
    (*chat)["tool_choice"] = "auto";
  } else if (type == "any") {
    (*chat)["tool_choice"] = "required";
  } else if (type == "none") {
    (*chat)["tool_choice"] = "none";
  } else if (type == "tool") {
    if (!c.contains("name") || !c["name"].is_string()) {
      *err = bad_request("tool_choice.name: required (a string) with type 'tool'", "tool_choice");
      return false;
    }
    (*chat)["tool_choice"] = Json{{"type", "function"}, {"function", Json{{"name", c["name"]}}}};
  } else {
    *err = bad_request(fmt::format("tool_choice.type: '{}' is not one of auto, any, tool, none",
                                   type.substr(0, 60)),
                       "tool_choice");
    return false;
  }
  if (auto d = c.find("disable_parallel_tool_use"); d != c.end() && !d->is_null()) {
    if (!d->is_boolean()) {
      *err = bad_request("tool_choice.disable_parallel_tool_use: must be a boolean", "tool_choice");
      return false;
    }
    (*chat)["parallel_tool_calls"] = !d->get<bool>();
  }
  return true;
}

const char* anthropic_stop_reason(const ChatOutcome& o) {
  // A reply cut by the token limit says so even when a call had begun: its
  // arguments may be incomplete.
  const bool cut = o.stop == StopReason::kLength || o.stop == StopReason::kContextFull ||
                   o.stop == StopReason::kCancelled;
  if (!o.calls.empty() && !cut) return "tool_use";
  switch (o.stop) {
    case StopReason::kStopString:
      return "stop_sequence";
    case StopReason::kLength:
    case StopReason::kContextFull:
    case StopReason::kCancelled:
      return "max_tokens";
    case StopReason::kEndOfGeneration:
      break;
  }
  return "end_turn";
}

Json anthropic_stop_sequence(const ChatOutcome& o) {
  if (!o.calls.empty() || o.stop != StopReason::kStopString || o.stop_sequence.empty()) {
    return nullptr;
  }
  return o.stop_sequence;
}

// A tool call's input: its arguments (a JSON object's text) parsed.
Json anthropic_input(const chat::ParsedToolCall& call) {
  Json input = Json::parse(call.arguments, nullptr, false);
  return input.is_object() ? input : Json::object();
}

std::string anthropic_tool_id(const chat::ParsedToolCall& call) {
  return call.id.empty() ? random_id("toolu_") : call.id;
}

std::string anthropic_event(const Json& e) {
  return fmt::format("event: {}\ndata: {}\n\n", e["type"].get<std::string>(), dump_json(e));
}

}  // namespace

const char* anthropic_error_type(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
      return "overloaded_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

Json anthropic_error_json(const ApiError& e) {
  return Json{
      {"type", "error"},
      {"error", Json{{"type", anthropic_error_type(e.http_status)}, {"message", e.message}}}};
}

HttpReply anthropic_error_reply(const ApiError& e) {
  HttpReply r;
  r.status = e.http_status;
  r.content_type = "application/json";
  r.body = dump_json(anthropic_error_json(e));
  return r;
}

bool parse_anthropic_request(const Json& body, bool count_tokens, AnthropicRequest* out,
                             ApiError* error) {
  *out = AnthropicRequest{};
  if (!body.is_object()) {
    *error = bad_request("the request body must be a JSON object");
    return false;
  }
  Json chat = Json::object();
  auto model = body.find("model");
  if (model == body.end() || !model->is_string()) {
    *error = bad_request("model: Field required (a string)", "model");
    return false;
  }
  chat["model"] = *model;
  if (!count_tokens) {
    auto mt = body.find("max_tokens");
    if (mt == body.end() || mt->is_null()) {
      *error = bad_request("max_tokens: Field required", "max_tokens");
      return false;
    }
    if (!mt->is_number_integer() || mt->get<int64_t>() < 1 || mt->get<int64_t>() > INT32_MAX) {
      *error = bad_request("max_tokens: must be an integer of at least 1", "max_tokens");
      return false;
    }
    chat["max_tokens"] = *mt;
  }
  Json messages = Json::array();
  if (auto s = body.find("system"); s != body.end() && !s->is_null()) {
    std::string system;
    if (!anthropic_text_of(*s, "system", "system", &system, error)) return false;
    messages.push_back(Json{{"role", "system"}, {"content", std::move(system)}});
  }
  auto msgs = body.find("messages");
  if (msgs == body.end() || !msgs->is_array() || msgs->empty()) {
    *error = bad_request("messages: must be a non-empty list of messages", "messages");
    return false;
  }
  std::map<std::string, std::string> names;  // tool_use id -> tool name
  for (size_t i = 0; i < msgs->size(); ++i) {
    if (!anthropic_message((*msgs)[i], i, &names, &messages, error)) return false;
  }
  chat["messages"] = std::move(messages);
  if (auto t = body.find("temperature"); t != body.end() && !t->is_null()) {
    if (!t->is_number() || t->get<double>() < 0 || t->get<double>() > 1) {
      *error = bad_request("temperature: must be a number in [0, 1]", "temperature");
      return false;
    }
  }
  for (const char* same : {"temperature", "top_p", "top_k", "stream"}) {
    if (auto it = body.find(same); it != body.end()) chat[same] = *it;
  }
  if (auto s = body.find("stop_sequences"); s != body.end() && !s->is_null()) {
    if (!s->is_array()) {
      *error = bad_request("stop_sequences: must be a list of strings", "stop_sequences");
      return false;
    }
    chat["stop"] = *s;
  }
  if (auto t = body.find("tools"); t != body.end() && !t->is_null()) {
    Json nested = Json::array();
    if (!anthropic_tools(*t, &nested, error)) return false;
    if (!nested.empty()) chat["tools"] = std::move(nested);
  }
  if (auto c = body.find("tool_choice"); c != body.end() && !c->is_null()) {
    if (!anthropic_tool_choice(*c, &chat, error)) return false;
  }
  if (auto th = body.find("thinking"); th != body.end() && !th->is_null()) {
    if (!th->is_object() || !th->contains("type") || !(*th)["type"].is_string()) {
      *error =
          bad_request("thinking: must be an object {\"type\": enabled | disabled}", "thinking");
      return false;
    }
    const std::string type = (*th)["type"].get<std::string>();
    if (type == "enabled") {
      auto b = th->find("budget_tokens");
      if (b == th->end() || !b->is_number_integer() || b->get<int64_t>() < 1) {
        *error =
            bad_request("thinking.budget_tokens: required, an integer of at least 1", "thinking");
        return false;
      }
      chat["chat_template_kwargs"] = Json{{"enable_thinking", true}};
      chat["reasoning_budget_tokens"] = *b;
    } else if (type == "disabled") {
      chat["chat_template_kwargs"] = Json{{"enable_thinking", false}};
    } else {
      *error = bad_request(
          fmt::format("thinking.type: '{}' is not one of enabled, disabled", type.substr(0, 60)),
          "thinking");
      return false;
    }
  }
  if (!parse_openai_request(chat, ApiKind::kChat, &out->chat, error)) {
    if (error->param == "stop") error->param = "stop_sequences";
    if (error->param == "reasoning_budget_tokens") error->param = "thinking.budget_tokens";
    if (!error->param.empty() && error->message.find(error->param) == std::string::npos) {
      error->message = error->param + ": " + error->message;
    }
    return false;
  }
  out->stream = out->chat.stream;
  return true;
}

// --- AnthropicWriter ---------------------------------------------------------------

AnthropicWriter::AnthropicWriter(std::string model, int64_t input_tokens)
    : id_(random_id("msg_")), model_(std::move(model)), input_tokens_(input_tokens) {}

std::string AnthropicWriter::stream_start() {
  Json message = Json{{"id", id_},
                      {"type", "message"},
                      {"role", "assistant"},
                      {"model", model_},
                      {"content", Json::array()},
                      {"stop_reason", nullptr},
                      {"stop_sequence", nullptr},
                      {"usage", Json{{"input_tokens", input_tokens_},
                                     {"output_tokens", 0},
                                     {"cache_creation_input_tokens", 0},
                                     {"cache_read_input_tokens", 0}}}};
  std::string out =
      anthropic_event(Json{{"type", "message_start"}, {"message", std::move(message)}});
  out += anthropic_event(Json{{"type", "ping"}});
  return out;
}

std::string AnthropicWriter::close_open() {
  if (open_ == Open::kNone) return "";
  std::string out;
  if (open_ == Open::kThinking) {
    // Anthropic signs thinking; folio's has no signature to give.
    out += anthropic_event(Json{{"type", "content_block_delta"},
                                {"index", index_},
                                {"delta", Json{{"type", "signature_delta"}, {"signature", ""}}}});
  }
  out += anthropic_event(Json{{"type", "content_block_stop"}, {"index", index_}});
  ++index_;
  open_ = Open::kNone;
  return out;
}

std::string AnthropicWriter::stream_reasoning(std::string_view text) {
  std::string out;
  if (open_ != Open::kThinking) {
    out += close_open();
    open_ = Open::kThinking;
    out += anthropic_event(
        Json{{"type", "content_block_start"},
             {"index", index_},
             {"content_block", Json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}}});
  }
  out += anthropic_event(Json{{"type", "content_block_delta"},
                              {"index", index_},
                              {"delta", Json{{"type", "thinking_delta"}, {"thinking", text}}}});
  return out;
}

std::string AnthropicWriter::stream_content(std::string_view text) {
  std::string out;
  if (open_ != Open::kText) {
    out += close_open();
    open_ = Open::kText;
    out += anthropic_event(Json{{"type", "content_block_start"},
                                {"index", index_},
                                {"content_block", Json{{"type", "text"}, {"text", ""}}}});
  }
  out += anthropic_event(Json{{"type", "content_block_delta"},
                              {"index", index_},
                              {"delta", Json{{"type", "text_delta"}, {"text", text}}}});
  return out;
}

std::string AnthropicWriter::stream_call_delta(const chat::ToolCallDelta& d) {
  std::string out;
  if (d.first) {
    out += close_open();
    chat::ParsedToolCall call;
    call.id = d.id;
    out += anthropic_event(Json{{"type", "content_block_start"},
                                {"index", index_},
                                {"content_block", Json{{"type", "tool_use"},
                                                       {"id", anthropic_tool_id(call)},
                                                       {"name", d.name},
                                                       {"input", Json::object()}}}});
  }
  if (d.arguments.empty()) return out;
  out += anthropic_event(Json{{"type", "content_block_delta"},
                              {"index", index_},
                              {"delta", Json{{"type", "input_json_delta"},
                                             {"partial_json", d.arguments}}}});
  return out;
}

std::string AnthropicWriter::stream_call_done(const chat::ParsedToolCall&) {
  std::string out = anthropic_event(Json{{"type", "content_block_stop"}, {"index", index_}});
  ++index_;
  return out;
}

std::string AnthropicWriter::stream_end(const ChatOutcome& o) {
  std::string out = close_open();
  out += anthropic_event(Json{{"type", "message_delta"},
                              {"delta", Json{{"stop_reason", anthropic_stop_reason(o)},
                                             {"stop_sequence", anthropic_stop_sequence(o)}}},
                              {"usage", Json{{"input_tokens", o.usage.prompt_tokens},
                                             {"output_tokens", o.usage.completion_tokens},
                                             {"cache_read_input_tokens", o.usage.cached_tokens}}}});
  out += anthropic_event(Json{{"type", "message_stop"}});
  return out;
}

std::string AnthropicWriter::stream_error(const ApiError& error) {
  return anthropic_event(anthropic_error_json(error));
}

Json AnthropicWriter::body(const ChatOutcome& o) {
  Json content = Json::array();
  if (!o.reasoning.empty()) {
    content.push_back(Json{{"type", "thinking"}, {"thinking", o.reasoning}, {"signature", ""}});
  }
  if (!o.content.empty() || (o.calls.empty() && o.reasoning.empty())) {
    content.push_back(Json{{"type", "text"}, {"text", o.content}});
  }
  for (const chat::ParsedToolCall& c : o.calls) {
    content.push_back(Json{{"type", "tool_use"},
                           {"id", anthropic_tool_id(c)},
                           {"name", c.name},
                           {"input", anthropic_input(c)}});
  }
  return Json{{"id", id_},
              {"type", "message"},
              {"role", "assistant"},
              {"model", model_},
              {"content", std::move(content)},
              {"stop_reason", anthropic_stop_reason(o)},
              {"stop_sequence", anthropic_stop_sequence(o)},
              {"usage", Json{{"input_tokens", o.usage.prompt_tokens},
                             {"output_tokens", o.usage.completion_tokens},
                             {"cache_creation_input_tokens", 0},
                             {"cache_read_input_tokens", o.usage.cached_tokens}}}};
}

RouteResult handle_anthropic_messages(const ServedModel& m, const std::string& body) {
  Json j;
  ApiError err;
  if (!parse_json_body(body, &j, &err)) return anthropic_error_reply(err);
  AnthropicRequest r;
  if (!parse_anthropic_request(j, /*count_tokens=*/false, &r, &err)) {
    return anthropic_error_reply(err);
  }
  ChatSubmission sub;
  if (!submit_chat(m, r.chat, &sub, &err)) return anthropic_error_reply(err);
  ChatApiReplyOptions o;
  o.stream = r.stream;
  o.parallel_tool_calls = r.chat.parallel_tool_calls;
  o.stop = r.chat.params.stop;
  auto writer = std::make_unique<AnthropicWriter>(m.id, sub.prompt_tokens);
  return make_chat_api_reply(m, std::move(sub), r.chat.tools, std::move(o), std::move(writer));
}

HttpReply handle_anthropic_count_tokens(const ServedModel& m, const std::string& body) {
  Json j;
  ApiError err;
  if (!parse_json_body(body, &j, &err)) return anthropic_error_reply(err);
  AnthropicRequest r;
  if (!parse_anthropic_request(j, /*count_tokens=*/true, &r, &err)) {
    return anthropic_error_reply(err);
  }
  std::vector<std::vector<int32_t>> prompts;
  if (!prompt_token_ids(m, r.chat, &prompts, &err)) return anthropic_error_reply(err);
  return json_reply(200, Json{{"input_tokens", static_cast<int64_t>(prompts.front().size())}});
}

}  // namespace folio::server
