#include "server/openai_response.h"

#include <fmt/format.h>

#include <cmath>
#include <random>

#include "core/utf8.h"

namespace folio::server {

namespace {

const char* object_name(ApiKind kind, bool chunk) {
  if (kind == ApiKind::kCompletion) return "text_completion";
  return chunk ? "chat.completion.chunk" : "chat.completion";
}

Json header(const ResponseContext& ctx, bool chunk) {
  Json j = Json::object();
  j["id"] = ctx.id;
  j["object"] = object_name(ctx.kind, chunk);
  j["created"] = ctx.created;
  j["model"] = ctx.model;
  return j;
}

// JSON has no infinities; a logprob of -inf (impossible for a sampled
// token, but cheap to guard) is sent as a very small number.
double finite_logprob(float lp) {
  return std::isfinite(lp) ? lp : -9999.0;
}

// A token's text for logprobs. A token that is part of a character (byte
// tokens) is written as OpenAI does, "bytes:\xe2\x80", so distinct tokens
// stay distinct and the JSON stays valid UTF-8.
std::string token_text(const tokenizer::Tokenizer& tok, int32_t id) {
  std::string piece = tok.piece(id, /*render_special=*/true);
  if (utf8_valid(piece)) return piece;
  std::string out = "bytes:";
  for (unsigned char c : piece) out += fmt::format("\\x{:02x}", c);
  return out;
}

Json bytes_of(const std::string& s) {
  Json b = Json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

}  // namespace

const char* finish_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kEndOfGeneration:
    case StopReason::kStopString:
      return "stop";
    case StopReason::kLength:
    case StopReason::kContextFull:
    case StopReason::kCancelled:
      return "length";
  }
  return "length";
}

std::string make_response_id(ApiKind kind) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}-{:016x}{:08x}", kind == ApiKind::kChat ? "chatcmpl" : "cmpl", rng(),
                     static_cast<uint32_t>(rng()));
}

Json usage_json(const Usage& u) {
  Json j = Json::object();
  j["prompt_tokens"] = u.prompt_tokens;
  j["completion_tokens"] = u.completion_tokens;
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  j["prompt_tokens_details"] = Json{{"cached_tokens", u.cached_tokens}};
  return j;
}

Json logprobs_json(ApiKind kind, const tokenizer::Tokenizer& tok,
                   std::span<const SampledToken> tokens, int64_t* text_offset) {
  // Control tokens show their text (an end-of-turn token is worth seeing);
  // text offsets count what the text holds.
  if (kind == ApiKind::kChat) {
    Json content = Json::array();
    for (const SampledToken& t : tokens) {
      Json top = Json::array();
      for (const TokenLogprob& alt : t.top_logprobs) {
        top.push_back(Json{{"token", token_text(tok, alt.token)},
                           {"logprob", finite_logprob(alt.logprob)},
                           {"bytes", bytes_of(tok.piece(alt.token, true))}});
      }
      content.push_back(Json{{"token", token_text(tok, t.token)},
                             {"logprob", finite_logprob(t.logprob)},
                             {"bytes", bytes_of(tok.piece(t.token, true))},
                             {"top_logprobs", std::move(top)}});
    }
    return Json{{"content", std::move(content)}};
  }
  Json toks = Json::array(), lps = Json::array(), tops = Json::array(), offsets = Json::array();
  for (const SampledToken& t : tokens) {
    toks.push_back(token_text(tok, t.token));
    lps.push_back(finite_logprob(t.logprob));
    // Keyed by text: of tokens with the same text the likelier one stays.
    Json top = Json::object();
    for (const TokenLogprob& alt : t.top_logprobs) {
      const std::string key = token_text(tok, alt.token);
      if (!top.contains(key)) top[key] = finite_logprob(alt.logprob);
    }
    tops.push_back(std::move(top));
    offsets.push_back(*text_offset);
    *text_offset += static_cast<int64_t>(tok.piece(t.token).size());
  }
  Json j = Json::object();
  j["tokens"] = std::move(toks);
  j["token_logprobs"] = std::move(lps);
  j["top_logprobs"] = std::move(tops);
  j["text_offset"] = std::move(offsets);
  return j;
}

std::string random_id(std::string_view prefix) {
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id(prefix);
  for (int i = 0; i < 24; ++i) id += kAlnum[rng() % (sizeof(kAlnum) - 1)];
  return id;
}

std::string tool_call_id(const chat::ParsedToolCall& call) {
  if (!call.id.empty()) return call.id;
  return random_id("call_");
}

namespace {

// {"index"? (streaming), "id", "type": "function", "function": {"name", "arguments"}}
Json tool_call_json(const chat::ParsedToolCall& call, int index) {
  Json j = Json::object();
  if (index >= 0) j["index"] = index;
  j["id"] = tool_call_id(call);
  j["type"] = "function";
  j["function"] = Json{{"name", call.name}, {"arguments", call.arguments}};
  return j;
}

}  // namespace

Json response_body(const ResponseContext& ctx, std::span<const ChoiceOutput> choices,
                   const Usage& usage, const tokenizer::Tokenizer& tok, bool with_logprobs) {
  Json j = header(ctx, /*chunk=*/false);
  Json list = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceOutput& c = choices[i];
    Json lp = nullptr;
    if (with_logprobs) {
      std::span<const SampledToken> kept = c.tokens;
      if (c.kept_tokens >= 0 && static_cast<size_t>(c.kept_tokens) < kept.size()) {
        kept = kept.first(static_cast<size_t>(c.kept_tokens));
      }
      int64_t offset = c.text_offset_base;
      lp = logprobs_json(ctx.kind, tok, kept, &offset);
    }
    Json choice = Json::object();
    if (ctx.kind == ApiKind::kCompletion) {
      choice["text"] = c.text;
      choice["index"] = i;
      choice["logprobs"] = std::move(lp);
      choice["finish_reason"] = c.finish_reason;
    } else {
      choice["index"] = i;
      Json message = Json{{"role", "assistant"}, {"content", c.text}};
      if (!c.reasoning.empty()) message["reasoning_content"] = c.reasoning;
      if (!c.tool_calls.empty()) {
        if (c.text.find_first_not_of(" \n\t\r") == std::string::npos) message["content"] = nullptr;
        Json calls = Json::array();
        for (const chat::ParsedToolCall& t : c.tool_calls) calls.push_back(tool_call_json(t, -1));
        message["tool_calls"] = std::move(calls);
      }
      choice["message"] = std::move(message);
      choice["logprobs"] = std::move(lp);
      choice["finish_reason"] = c.finish_reason;
    }
    list.push_back(std::move(choice));
  }
  j["choices"] = std::move(list);
  j["usage"] = usage_json(usage);
  return j;
}

Json stream_chunk(const ResponseContext& ctx, int index, bool role, std::string_view text,
                  Json logprobs, const char* finish_reason) {
  Json j = header(ctx, /*chunk=*/true);
  Json choice = Json::object();
  if (ctx.kind == ApiKind::kCompletion) {
    choice["text"] = text;
    choice["index"] = index;
  } else {
    choice["index"] = index;
    Json delta = Json::object();
    if (role) delta["role"] = "assistant";
    if (role || !text.empty()) delta["content"] = text;
    choice["delta"] = std::move(delta);
  }
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = finish_reason != nullptr ? Json(finish_reason) : Json(nullptr);
  j["choices"] = Json::array({std::move(choice)});
  if (ctx.include_usage) j["usage"] = nullptr;
  return j;
}

Json reasoning_chunk(const ResponseContext& ctx, int index, std::string_view reasoning) {
  Json j = header(ctx, /*chunk=*/true);
  Json choice = Json::object();
  choice["index"] = index;
  choice["delta"] = Json{{"reasoning_content", reasoning}};
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = nullptr;
  j["choices"] = Json::array({std::move(choice)});
  if (ctx.include_usage) j["usage"] = nullptr;
  return j;
}

Json tool_call_delta_chunk(const ResponseContext& ctx, int index, const chat::ToolCallDelta& d) {
  Json j = header(ctx, /*chunk=*/true);
  Json call = Json::object();
  call["index"] = d.index;
  if (d.first) {
    call["id"] = d.id.empty() ? random_id("call_") : d.id;
    call["type"] = "function";
    call["function"] = Json{{"name", d.name}, {"arguments", d.arguments}};
  } else {
    call["function"] = Json{{"arguments", d.arguments}};
  }
  Json choice = Json::object();
  choice["index"] = index;
  choice["delta"] = Json{{"tool_calls", Json::array({std::move(call)})}};
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = nullptr;
  j["choices"] = Json::array({std::move(choice)});
  if (ctx.include_usage) j["usage"] = nullptr;
  return j;
}

Json usage_chunk(const ResponseContext& ctx, const Usage& usage) {
  Json j = header(ctx, /*chunk=*/true);
  j["choices"] = Json::array();
  j["usage"] = usage_json(usage);
  return j;
}

std::string sse_event(const Json& j) {
  std::string s = "data: ";
  s += dump_json(j);
  s += "\n\n";
  return s;
}

}  // namespace folio::server
