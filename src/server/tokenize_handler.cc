// POST /tokenize and /detokenize, in llama.cpp's server shapes:
//   {"content", "add_special"? (false), "parse_special"? (true)} -> {"tokens": [...]}
//   {"tokens": [...]} -> {"content"} (control tokens rendered)
// and /tokenize in vLLM's, the ids generation would be fed (what routers ask
// replicas for):
//   {"prompt": "..."} or {"messages": [...], "add_generation_prompt"? (true), ...}
//     -> {"tokens": [...], "count", "max_model_len"}
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <iterator>

#include "server/routes.h"

namespace folio::server {

namespace {

// {"tokens": [ids...] + rest} written as text: a Json array would hold 16
// bytes per id besides the text (a 10 MB body has millions of ids).
HttpReply tokenize_handler_reply(const std::vector<int32_t>& ids, const std::string& rest = "") {
  HttpReply r;
  r.body.reserve(ids.size() * 7 + rest.size() + 16);
  r.body += "{\"tokens\":[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i != 0) r.body += ',';
    fmt::format_to(std::back_inserter(r.body), "{}", ids[i]);
  }
  r.body += ']';
  r.body += rest;
  r.body += '}';
  return r;
}

}  // namespace

HttpReply handle_tokenize(const ServedModel& m, const std::string& body) {
  Json j;
  ApiError err;
  if (!parse_json_body(body, &j, &err)) return err.reply();
  auto content = j.find("content");
  if (content == j.end() && (j.contains("prompt") || j.contains("messages"))) {
    const ApiKind kind = j.contains("messages") ? ApiKind::kChat : ApiKind::kCompletion;
    if (kind == ApiKind::kCompletion && !j["prompt"].is_string()) {
      return bad_request("'prompt' must be a string", "prompt").reply();
    }
    std::vector<std::vector<int32_t>> prompts;
    if (!prompt_token_ids(m, kind, j, &prompts, &err)) return err.reply();
    return tokenize_handler_reply(prompts.front(), fmt::format(",\"count\":{},\"max_model_len\":{}",
                                                               prompts.front().size(), m.n_ctx));
  }
  if (content == j.end() || !content->is_string()) {
    return bad_request("'content' must be a string", "content").reply();
  }
  tokenizer::TokenizeOptions to;
  to.add_special = false;  // llama.cpp's server defaults
  to.parse_special = true;
  for (const char* key : {"add_special", "parse_special"}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_boolean()) {
      return bad_request(fmt::format("'{}' must be a boolean", key), key).reply();
    }
    (std::string_view(key) == "add_special" ? to.add_special : to.parse_special) = it->get<bool>();
  }
  return tokenize_handler_reply(m.tokenizer->tokenize(content->get_ref<const std::string&>(), to));
}

HttpReply handle_detokenize(const ServedModel& m, const std::string& body) {
  Json j;
  ApiError err;
  if (!parse_json_body(body, &j, &err)) return err.reply();
  auto tokens = j.find("tokens");
  if (tokens == j.end() || !tokens->is_array()) {
    return bad_request("'tokens' must be a list of token ids", "tokens").reply();
  }
  std::vector<int32_t> ids;
  for (const Json& t : *tokens) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
        !m.tokenizer->vocab().valid(
            static_cast<int32_t>(std::min<int64_t>(t.get<int64_t>(), INT32_MAX)))) {
      return bad_request(fmt::format("token {} is not in the vocabulary [0, {})",
                                                     dump_json(t), m.tokenizer->vocab().size()),
                                         "tokens").reply();
    }
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  tokenizer::DetokenizeOptions o;
  o.render_special = true;  // llama.cpp's /detokenize prints control tokens
  return json_reply(200, Json{{"content", m.tokenizer->detokenize(ids, o)}});
}

}  // namespace folio::server
