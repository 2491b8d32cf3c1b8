#include "server/responses_api.h"

#include <fmt/format.h>

#include <ctime>
#include <map>

#include "server/routes.h"
#include "server/text_parts.h"

namespace folio::server {

namespace {

const char* responses_text_part_field(const std::string& type) {
  if (type == "input_text" || type == "output_text" || type == "text") return "text";
  return type == "refusal" ? "refusal" : nullptr;
}

// The text of a message's content: a string or a list of text parts.
bool responses_content_text(const Json& content, const std::string& where, std::string* out,
                            ApiError* err) {
  static constexpr TextPartRule kTextParts{responses_text_part_field,
                                           "text parts only: input_text, output_text, refusal"};
  return text_of_parts(content, where, "input", kTextParts, out, err);
}

// A required string field of an input item.
bool responses_item_string(const Json& item, const char* field, const std::string& where,
                           std::string* out, ApiError* err) {
  auto it = item.find(field);
  if (it == item.end() || !it->is_string()) {
    *err = bad_request(fmt::format("{}.{} must be a string", where, field), "input");
    return false;
  }
  *out = it->get<std::string>();
  return true;
}

// The texts of a reasoning item's content (reasoning_text) or, without
// them, its summary (summary_text).
bool responses_reasoning_text(const Json& item, const std::string& where, std::string* out,
                              ApiError* err) {
  for (const char* field : {"content", "summary"}) {
    auto list = item.find(field);
    if (list == item.end() || list->is_null()) continue;
    if (!list->is_array()) {
      *err = bad_request(fmt::format("{}.{} must be a list", where, field), "input");
      return false;
    }
    std::string text;
    for (size_t k = 0; k < list->size(); ++k) {
      const Json& part = (*list)[k];
      auto t = part.is_object() ? part.find("text") : part.end();
      if (!part.is_object() || t == part.end() || !t->is_string()) {
        *err =
            bad_request(fmt::format("{}.{}[{}].text must be a string", where, field, k), "input");
        return false;
      }
      if (!text.empty()) text += '\n';
      text += t->get<std::string>();
    }
    if (!text.empty()) {
      *out = std::move(text);
      return true;
    }
  }
  out->clear();
  return true;
}

// Input items -> chat messages, appended to *messages.
bool responses_input_messages(const Json& input, Json* messages, ApiError* err) {
  if (input.is_string()) {
    messages->push_back(Json{{"role", "user"}, {"content", input}});
    return true;
  }
  if (!input.is_array()) {
    *err = bad_request("'input' must be a string or a list of input items", "input");
    return false;
  }
  std::string reasoning;  // a reasoning item's text, for the next assistant message
  std::map<std::string, std::string> call_names;  // call_id -> function name
  for (const Json& m : *messages) {               // the stored conversation's calls
    auto calls = m.find("tool_calls");
    if (calls == m.end() || !calls->is_array()) continue;
    for (const Json& c : *calls) {
      if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) continue;
      call_names[c.value("id", "")] = c["function"].value("name", "");
    }
  }
  // The assistant message the next function_call joins, when it is the last one.
  auto assistant_tail = [&]() -> Json* {
    if (messages->empty()) return nullptr;
    Json& last = messages->back();
    return last["role"] == "assistant" ? &last : nullptr;
  };
  for (size_t i = 0; i < input.size(); ++i) {
    const Json& item = input[i];
    const std::string where = fmt::format("input[{}]", i);
    if (!item.is_object()) {
      *err = bad_request(where + " must be an object", "input");
      return false;
    }
    std::string type = "message";
    if (auto t = item.find("type"); t != item.end() && !t->is_null()) {
      if (!t->is_string()) {
        *err = bad_request(where + ".type must be a string", "input");
        return false;
      }
      type = t->get<std::string>();
    }
    if (type == "message") {
      std::string role;
      if (!responses_item_string(item, "role", where, &role, err)) return false;
      if (role != "user" && role != "assistant" && role != "system" && role != "developer") {
        *err = bad_request(fmt::format("{}.role '{}' is not one of user, assistant, system, "
                                       "developer",
                                       where, role.substr(0, 60)),
                           "input");
        return false;
      }
      auto c = item.find("content");
      if (c == item.end()) {
        *err = bad_request(where + ".content is required", "input");
        return false;
      }
      std::string text;
      if (!responses_content_text(*c, where + ".content", &text, err)) return false;
      Json msg = Json{{"role", role}, {"content", std::move(text)}};
      if (role == "assistant" && !reasoning.empty()) {
        msg["reasoning_content"] = std::move(reasoning);
        reasoning.clear();
      }
      messages->push_back(std::move(msg));
    } else if (type == "function_call") {
      std::string call_id, name, arguments;
      if (!responses_item_string(item, "call_id", where, &call_id, err) ||
          !responses_item_string(item, "name", where, &name, err) ||
          !responses_item_string(item, "arguments", where, &arguments, err)) {
        return false;
      }
      call_names[call_id] = name;
      Json call = Json{{"id", call_id},
                       {"type", "function"},
                       {"function", Json{{"name", name}, {"arguments", arguments}}}};
      Json* tail = assistant_tail();
      if (tail == nullptr) {
        messages->push_back(Json{{"role", "assistant"}, {"content", nullptr}});
        tail = &messages->back();
      }
      if (!reasoning.empty()) {
        (*tail)["reasoning_content"] = std::move(reasoning);
        reasoning.clear();
      }
      (*tail)["tool_calls"].push_back(std::move(call));
    } else if (type == "function_call_output") {
      std::string call_id;
      if (!responses_item_string(item, "call_id", where, &call_id, err)) return false;
      auto o = item.find("output");
      if (o == item.end()) {
        *err = bad_request(where + ".output is required", "input");
        return false;
      }
      std::string output;
      if (!responses_content_text(*o, where + ".output", &output, err)) return false;
      Json msg = Json{{"role", "tool"}, {"tool_call_id", call_id}, {"content", std::move(output)}};
      if (auto n = call_names.find(call_id); n != call_names.end()) msg["name"] = n->second;
      messages->push_back(std::move(msg));
    } else if (type == "reasoning") {
      if (!responses_reasoning_text(item, where, &reasoning, err)) return false;
    } else {
      *err = bad_request(fmt::format("{}.type {} is not supported (message, function_call, "
                                     "function_call_output, reasoning)",
                                     where, show_json_value(item["type"])),
                         "input");
      return false;
    }
  }
  return true;
}

// Responses' flat function tools -> Chat Completions' nested ones.
bool responses_tools(const Json& tools, Json* flat, Json* nested, ApiError* err) {
  if (!tools.is_array()) {
    *err = bad_request("'tools' must be a list of tool definitions", "tools");
    return false;
  }
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    const std::string where = fmt::format("tools[{}]", i);
    if (!t.is_object() || !t.contains("type") || !t["type"].is_string()) {
      *err = bad_request(where + " must be an object with a 'type'", "tools");
      return false;
    }
    if (t["type"] != "function") {
      *err = bad_request(fmt::format("{}.type '{}' is not supported: only function tools", where,
                                     t["type"].get<std::string>().substr(0, 60)),
                         "tools");
      return false;
    }
    if (!t.contains("name") || !t["name"].is_string() || t["name"].get<std::string>().empty()) {
      *err = bad_request(where + ".name must be a non-empty string", "tools");
      return false;
    }
    Json fn = Json{{"name", t["name"]}};
    if (auto d = t.find("description"); d != t.end() && !d->is_null()) {
      if (!d->is_string()) {
        *err = bad_request(where + ".description must be a string", "tools");
        return false;
      }
      fn["description"] = *d;
    }
    Json params = Json{{"type", "object"}, {"properties", Json::object()}};
    if (auto p = t.find("parameters"); p != t.end() && !p->is_null()) {
      if (!p->is_object()) {
        *err = bad_request(where + ".parameters must be a JSON Schema object", "tools");
        return false;
      }
      params = *p;
    }
    fn["parameters"] = params;
    bool strict = false;
    if (auto s = t.find("strict"); s != t.end() && !s->is_null()) {
      if (!s->is_boolean()) {
        *err = bad_request(where + ".strict must be a boolean", "tools");
        return false;
      }
      strict = s->get<bool>();
      fn["strict"] = strict;
    }
    Json echoed = fn;
    echoed["type"] = "function";
    echoed["strict"] = strict;
    flat->push_back(std::move(echoed));
    nested->push_back(Json{{"type", "function"}, {"function", std::move(fn)}});
  }
  return true;
}

// The chat request's field names -> the Responses request's, in errors.
void responses_rename_param(ApiError* err) {
  static const std::map<std::string, std::string> kNames = {
      {"max_tokens", "max_output_tokens"},
      {"messages", "input"},
      {"response_format", "text"},
      {"reasoning_effort", "reasoning"},
  };
  if (auto it = kNames.find(err->param); it != kNames.end()) err->param = it->second;
}

tokenizer::TokenizeOptions responses_no_bos() {
  tokenizer::TokenizeOptions o;
  o.add_special = false;
  o.parse_special = false;
  return o;
}

Json responses_usage(const Usage& u, int64_t reasoning_tokens) {
  return Json{{"input_tokens", u.prompt_tokens},
              {"input_tokens_details", Json{{"cached_tokens", u.cached_tokens}}},
              {"output_tokens", u.completion_tokens},
              {"output_tokens_details", Json{{"reasoning_tokens", reasoning_tokens}}},
              {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

Json responses_reasoning_item(const std::string& id, std::string_view text, const char* status) {
  Json content = Json::array();
  if (!text.empty()) content.push_back(Json{{"type", "reasoning_text"}, {"text", text}});
  return Json{{"id", id},
              {"type", "reasoning"},
              {"summary", Json::array()},
              {"content", std::move(content)},
              {"status", status}};
}

Json responses_text_part(std::string_view text) {
  return Json{{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}};
}

Json responses_message_item(const std::string& id, std::string_view text, const char* status) {
  Json content = Json::array();
  if (std::string_view(status) == "completed") content.push_back(responses_text_part(text));
  return Json{{"id", id},
              {"type", "message"},
              {"status", status},
              {"role", "assistant"},
              {"content", std::move(content)}};
}

Json responses_call_item(const std::string& id, const chat::ParsedToolCall& call,
                         std::string_view arguments, const char* status) {
  return Json{{"id", id},
              {"type", "function_call"},
              {"status", status},
              {"arguments", arguments},
              {"call_id", tool_call_id(call)},
              {"name", call.name}};
}

}  // namespace

bool parse_responses_request(const Json& body, ResponseStore* store, ResponsesRequest* out,
                             ApiError* error) {
  *out = ResponsesRequest{};
  if (!body.is_object()) {
    *error = bad_request("the request body must be a JSON object");
    return false;
  }
  for (const char* refused : {"background", "conversation"}) {
    auto it = body.find(refused);
    if (it != body.end() && !it->is_null() && *it != false) {
      *error = bad_request(fmt::format("'{}' is not supported by this server", refused), refused);
      return false;
    }
  }
  // The chat request the rest is translated into; scalar fields keep
  // their names and are checked by parse_openai_request.
  Json chat = Json::object();
  for (const char* same : {
           "model",
           "temperature",
           "top_p",
           "parallel_tool_calls",
           "stream",
       }) {
    if (auto it = body.find(same); it != body.end()) chat[same] = *it;
  }
  Json history = Json::array();
  if (auto p = body.find("previous_response_id"); p != body.end() && !p->is_null()) {
    if (!p->is_string()) {
      *error = bad_request("'previous_response_id' must be a string", "previous_response_id");
      return false;
    }
    std::optional<Json> kept = store != nullptr ? store->get(p->get<std::string>()) : std::nullopt;
    if (!kept) {
      *error = not_found_error(fmt::format("Previous response with id '{}' not found.",
                                           p->get<std::string>().substr(0, 100)),
                               "previous_response_not_found");
      error->param = "previous_response_id";
      return false;
    }
    history = std::move(*kept);
    out->previous_response_id = *p;
  }
  auto input = body.find("input");
  if (input == body.end() || input->is_null()) {
    *error = bad_request("'input' is required", "input");
    return false;
  }
  if (!responses_input_messages(*input, &history, error)) return false;
  Json messages = Json::array();
  if (auto in = body.find("instructions"); in != body.end() && !in->is_null()) {
    if (!in->is_string()) {
      *error = bad_request("'instructions' must be a string", "instructions");
      return false;
    }
    messages.push_back(Json{{"role", "system"}, {"content", *in}});
    out->instructions = *in;
  }
  for (const Json& m : history) messages.push_back(m);
  if (messages.empty()) {
    *error = bad_request("'input' must hold at least one item", "input");
    return false;
  }
  chat["messages"] = std::move(messages);
  if (auto t = body.find("tools"); t != body.end() && !t->is_null()) {
    Json nested = Json::array();
    if (!responses_tools(*t, &out->tools, &nested, error)) return false;
    if (!nested.empty()) chat["tools"] = std::move(nested);
  }
  if (auto c = body.find("tool_choice"); c != body.end() && !c->is_null()) {
    if (c->is_string()) {
      chat["tool_choice"] = *c;
    } else if (c->is_object() && c->value("type", Json()) == "function" && c->contains("name") &&
               (*c)["name"].is_string()) {
      chat["tool_choice"] = Json{{"type", "function"}, {"function", Json{{"name", (*c)["name"]}}}};
    } else {
      *error = bad_request(
          "'tool_choice' must be 'none', 'auto', 'required' or {\"type\": "
          "\"function\", \"name\": ...}",
          "tool_choice");
      return false;
    }
    out->tool_choice = *c;
  }
  if (auto m = body.find("max_output_tokens"); m != body.end() && !m->is_null()) {
    if (!m->is_number_integer() || m->get<int64_t>() < 1 || m->get<int64_t>() > INT32_MAX) {
      *error =
          bad_request("'max_output_tokens' must be an integer of at least 1", "max_output_tokens");
      return false;
    }
    chat["max_tokens"] = *m;
    out->max_output_tokens = *m;
  }
  if (auto r = body.find("reasoning"); r != body.end() && !r->is_null()) {
    if (!r->is_object()) {
      *error = bad_request("'reasoning' must be an object {\"effort\": ...}", "reasoning");
      return false;
    }
    if (auto e = r->find("effort"); e != r->end() && !e->is_null()) {
      if (*e == "none") {
        chat["chat_template_kwargs"] = Json{{"enable_thinking", false}};
      } else {
        chat["reasoning_effort"] = *e;  // checked by parse_openai_request
      }
      out->reasoning_effort = *e;
    }
  }
  if (auto t = body.find("text"); t != body.end() && !t->is_null()) {
    auto f = t->is_object() ? t->find("format") : t->end();
    if (!t->is_object()) {
      *error = bad_request("'text' must be an object {\"format\": ...}", "text");
      return false;
    }
    if (f != t->end() && !f->is_null()) {
      if (!f->is_object() || !f->contains("type") || !(*f)["type"].is_string()) {
        *error = bad_request("'text.format' must be an object with a 'type'", "text");
        return false;
      }
      const std::string type = (*f)["type"].get<std::string>();
      if (type == "json_schema") {
        Json js = Json{{"name", f->value("name", Json("response"))},
                       {"schema", f->value("schema", Json())},
                       {"strict", f->value("strict", Json(false))}};
        chat["response_format"] = Json{{"type", "json_schema"}, {"json_schema", std::move(js)}};
      } else {
        chat["response_format"] = Json{{"type", type}};
      }
      out->text_format = *f;
    }
  }
  if (!parse_openai_request(chat, ApiKind::kChat, &out->chat, error)) {
    responses_rename_param(error);
    return false;
  }
  out->stream = out->chat.stream;
  if (auto st = body.find("store"); st != body.end() && !st->is_null()) {
    if (!st->is_boolean()) {
      *error = bad_request("'store' must be a boolean", "store");
      return false;
    }
    out->store = st->get<bool>();
  }
  if (auto md = body.find("metadata"); md != body.end() && !md->is_null()) {
    if (!md->is_object()) {
      *error = bad_request("'metadata' must be an object", "metadata");
      return false;
    }
    out->metadata = *md;
  }
  out->temperature = body.contains("temperature") && body["temperature"].is_number()
                         ? body["temperature"].get<float>()
                         : 1.0f;
  out->top_p =
      body.contains("top_p") && body["top_p"].is_number() ? body["top_p"].get<float>() : 1.0f;
  out->history = std::move(history);
  return true;
}

// --- ResponsesWriter -------------------------------------------------------------

ResponsesWriter::ResponsesWriter(const ResponsesRequest& r, std::string model,
                                 const tokenizer::Tokenizer* tok,
                                 std::shared_ptr<ResponseStore> store)
    : id_(random_id("resp_")),
      created_at_(static_cast<int64_t>(std::time(nullptr))),
      model_(std::move(model)),
      tok_(tok),
      store_(std::move(store)),
      history_(r.history),
      keep_(r.store) {
  settings_ = Json::object();
  settings_["instructions"] = r.instructions;
  settings_["max_output_tokens"] = r.max_output_tokens;
  settings_["parallel_tool_calls"] = r.chat.parallel_tool_calls;
  settings_["previous_response_id"] = r.previous_response_id;
  settings_["reasoning"] = Json{{"effort", r.reasoning_effort}, {"summary", nullptr}};
  settings_["store"] = r.store;
  settings_["temperature"] = r.temperature;
  settings_["text"] = Json{{"format", r.text_format}};
  settings_["tool_choice"] = r.tool_choice;
  settings_["tools"] = r.tools;
  settings_["top_p"] = r.top_p;
  settings_["truncation"] = "disabled";
  settings_["metadata"] = r.metadata;
}

std::string ResponsesWriter::event(Json e) {
  e["sequence_number"] = sequence_++;
  const std::string type = e["type"].get<std::string>();
  return fmt::format("event: {}\ndata: {}\n\n", type, dump_json(e));
}

Json ResponsesWriter::response(const char* status, const ChatOutcome* outcome) const {
  Json j = Json::object();
  j["id"] = id_;
  j["object"] = "response";
  j["created_at"] = created_at_;
  j["status"] = status;
  j["error"] = nullptr;
  j["incomplete_details"] = nullptr;
  if (std::string_view(status) == "incomplete") {
    j["incomplete_details"] = Json{{"reason", "max_output_tokens"}};
  }
  j["model"] = model_;
  j["output"] = output_;
  for (const auto& [k, v] : settings_.items()) j[k] = v;
  j["usage"] = nullptr;
  if (outcome != nullptr) {
    const int64_t reasoning_tokens =
        tok_ != nullptr && !outcome->reasoning.empty()
            ? static_cast<int64_t>(tok_->tokenize(outcome->reasoning, responses_no_bos()).size())
            : 0;
    j["usage"] = responses_usage(outcome->usage, reasoning_tokens);
  }
  return j;
}

std::string ResponsesWriter::stream_start() {
  std::string out =
      event(Json{{"type", "response.created"}, {"response", response("in_progress", nullptr)}});
  out +=
      event(Json{{"type", "response.in_progress"}, {"response", response("in_progress", nullptr)}});
  return out;
}

std::string ResponsesWriter::close_open() {
  std::string out;
  const int64_t index = static_cast<int64_t>(output_.size());
  if (open_ == Open::kReasoning) {
    out += event(Json{{"type", "response.reasoning_text.done"},
                      {"item_id", open_id_},
                      {"output_index", index},
                      {"content_index", 0},
                      {"text", open_text_}});
    Json item = responses_reasoning_item(open_id_, open_text_, "completed");
    out +=
        event(Json{{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
    output_.push_back(std::move(item));
  } else if (open_ == Open::kMessage) {
    out += event(Json{{"type", "response.output_text.done"},
                      {"item_id", open_id_},
                      {"output_index", index},
                      {"content_index", 0},
                      {"text", open_text_},
                      {"logprobs", Json::array()}});
    out += event(Json{{"type", "response.content_part.done"},
                      {"item_id", open_id_},
                      {"output_index", index},
                      {"content_index", 0},
                      {"part", responses_text_part(open_text_)}});
    Json item = responses_message_item(open_id_, open_text_, "completed");
    out +=
        event(Json{{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
    output_.push_back(std::move(item));
  }
  open_ = Open::kNone;
  open_text_.clear();
  return out;
}

std::string ResponsesWriter::stream_reasoning(std::string_view text) {
  std::string out;
  if (open_ != Open::kReasoning) {
    out += close_open();
    open_ = Open::kReasoning;
    open_id_ = random_id("rs_");
    out += event(Json{{"type", "response.output_item.added"},
                      {"output_index", static_cast<int64_t>(output_.size())},
                      {"item", responses_reasoning_item(open_id_, "", "in_progress")}});
  }
  open_text_ += text;
  out += event(Json{{"type", "response.reasoning_text.delta"},
                    {"item_id", open_id_},
                    {"output_index", static_cast<int64_t>(output_.size())},
                    {"content_index", 0},
                    {"delta", text}});
  return out;
}

std::string ResponsesWriter::stream_content(std::string_view text) {
  std::string out;
  if (open_ != Open::kMessage) {
    out += close_open();
    open_ = Open::kMessage;
    open_id_ = random_id("msg_");
    const int64_t index = static_cast<int64_t>(output_.size());
    out += event(Json{{"type", "response.output_item.added"},
                      {"output_index", index},
                      {"item", responses_message_item(open_id_, "", "in_progress")}});
    out += event(Json{{"type", "response.content_part.added"},
                      {"item_id", open_id_},
                      {"output_index", index},
                      {"content_index", 0},
                      {"part", responses_text_part("")}});
  }
  open_text_ += text;
  out += event(Json{{"type", "response.output_text.delta"},
                    {"item_id", open_id_},
                    {"output_index", static_cast<int64_t>(output_.size())},
                    {"content_index", 0},
                    {"delta", text},
                    {"logprobs", Json::array()}});
  return out;
}

std::string ResponsesWriter::stream_call_delta(const chat::ToolCallDelta& d) {
  std::string out;
  if (d.first) {
    out += close_open();
    chat::ParsedToolCall call;
    call.id = d.id;
    call.name = d.name;
    call_id_ = tool_call_id(call);  // one id in every event
    call.id = call_id_;
    call_item_id_ = random_id("fc_");
    call_index_ = static_cast<int64_t>(output_.size());
    out += event(Json{{"type", "response.output_item.added"},
                      {"output_index", call_index_},
                      {"item", responses_call_item(call_item_id_, call, "", "in_progress")}});
  }
  if (d.arguments.empty()) return out;
  out += event(Json{{"type", "response.function_call_arguments.delta"},
                    {"item_id", call_item_id_},
                    {"output_index", call_index_},
                    {"delta", d.arguments}});
  return out;
}

std::string ResponsesWriter::stream_call_done(const chat::ParsedToolCall& c) {
  std::string out;
  chat::ParsedToolCall call = c;
  call.id = call_id_;
  out += event(Json{{"type", "response.function_call_arguments.done"},
                    {"item_id", call_item_id_},
                    {"output_index", call_index_},
                    {"name", call.name},
                    {"arguments", call.arguments}});
  Json item = responses_call_item(call_item_id_, call, call.arguments, "completed");
  out += event(
      Json{{"type", "response.output_item.done"}, {"output_index", call_index_}, {"item", item}});
  output_.push_back(std::move(item));
  return out;
}

void ResponsesWriter::keep(const ChatOutcome& outcome) {
  if (!keep_ || store_ == nullptr) return;
  Json turn = Json{{"role", "assistant"}, {"content", nullptr}};
  if (!outcome.content.empty() || outcome.calls.empty()) turn["content"] = outcome.content;
  if (!outcome.reasoning.empty()) turn["reasoning_content"] = outcome.reasoning;
  for (const Json& item : output_) {
    if (item["type"] != "function_call") continue;
    turn["tool_calls"].push_back(
        Json{{"id", item["call_id"]},
             {"type", "function"},
             {"function", Json{{"name", item["name"]}, {"arguments", item["arguments"]}}}});
  }
  Json messages = history_;
  messages.push_back(std::move(turn));
  store_->put(id_, messages);
}

namespace {

const char* responses_status(const ChatOutcome& o) {
  return o.stop == StopReason::kLength || o.stop == StopReason::kContextFull ? "incomplete"
                                                                             : "completed";
}

}  // namespace

std::string ResponsesWriter::stream_end(const ChatOutcome& outcome) {
  std::string out = close_open();
  const char* status = responses_status(outcome);
  keep(outcome);
  const std::string type = std::string("response.") + status;
  out += event(Json{{"type", type}, {"response", response(status, &outcome)}});
  return out;
}

std::string ResponsesWriter::stream_error(const ApiError& error) {
  std::string out = close_open();
  Json r = response("failed", nullptr);
  r["error"] = Json{{"code", error.code.empty() ? std::string("server_error") : error.code},
                    {"message", error.message}};
  out += event(Json{{"type", "response.failed"}, {"response", std::move(r)}});
  return out;
}

Json ResponsesWriter::body(const ChatOutcome& outcome) {
  output_ = Json::array();
  if (!outcome.reasoning.empty()) {
    output_.push_back(responses_reasoning_item(random_id("rs_"), outcome.reasoning, "completed"));
  }
  if (!outcome.content.empty() || outcome.calls.empty()) {
    output_.push_back(responses_message_item(random_id("msg_"), outcome.content, "completed"));
  }
  for (const chat::ParsedToolCall& c : outcome.calls) {
    output_.push_back(responses_call_item(random_id("fc_"), c, c.arguments, "completed"));
  }
  keep(outcome);
  return response(responses_status(outcome), &outcome);
}

RouteResult handle_responses(const ServedModel& m, const std::shared_ptr<ResponseStore>& store,
                             const std::string& body) {
  Json j;
  ApiError err;
  if (!parse_json_body(body, &j, &err)) return err.reply();
  ResponsesRequest r;
  if (!parse_responses_request(j, store.get(), &r, &err)) return err.reply();
  ChatSubmission sub;
  if (!submit_chat(m, r.chat, &sub, &err)) {
    responses_rename_param(&err);
    return err.reply();
  }
  ChatApiReplyOptions o;
  o.stream = r.stream;
  o.parallel_tool_calls = r.chat.parallel_tool_calls;
  auto writer = std::make_unique<ResponsesWriter>(r, m.id, m.tokenizer, store);
  return make_chat_api_reply(m, std::move(sub), r.chat.tools, std::move(o), std::move(writer));
}

}  // namespace folio::server
