// POST /v1/completions and /v1/chat/completions: parse and validate the
// body, render / tokenize the prompts, submit one GenerationRequest per
// prompt (its n choices share the prompt's blocks), and hand the transport
// a GenerationReply that turns the request's events into the answer:
//   streaming      head (200) and the first chunks at once, one SSE chunk
//                  per token event (finish_reason on the choice's
//                  last content chunk when the end is already known, else on
//                  a final chunk with the held-back tail or an empty delta),
//                  the usage chunk, `data: [DONE]`;
//   non-streaming  one JSON body when every choice has finished, or the
//                  failure's status and error body.
// A client that leaves gets its requests cancelled (blocks freed before the
// scheduler's next step).
#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <memory>
#include <optional>

#include "chat/chat_parser.h"
#include "chat/generic_tools.h"
#include "chat/phi4_tools.h"
#include "core/log.h"
#include "server/chat_prompt.h"
#include "server/event_queue.h"
#include "server/openai_response.h"
#include "server/output_grammar.h"
#include "server/routes.h"

namespace folio::server {

namespace {

// One submission: a prompt and, for echo, its text.
struct Submission {
  std::vector<int32_t> tokens;
  std::string echo_text;
  bool reasoning_open = false;  // chat: the prompt opened the reasoning block
  // chat, a budget N > 0 and a format with reasoning: its reasoning blocks'
  // budget
  std::shared_ptr<const ReasoningBudgetSpec> reasoning_budget;
};

// An engine-side end that is not a normal finish.
std::optional<ApiError> failure_of(const RequestResult& r) {
  if (!r.status.ok()) return api_error_from_status(r.status);
  for (const ChoiceResult& c : r.choices) {
    if (c.stop == StopReason::kCancelled) {
      return unavailable_error("the request was cancelled: the server is stopping");
    }
  }
  return std::nullopt;
}

// The chunk being held so that a done event right behind it can carry
// finish_reason in it.
struct PendingChunk {
  int index = -1;
  std::string text;
  Json logprobs;
};

// One HTTP generation request: its submissions' events in, the answer out.
// Built on a worker thread; after that, poll() and cancel() run on the
// connection's executor and the scheduler's callbacks only touch `queue`.
class GenerationReply final : public AsyncReply {
 public:
  GenerationService* service = nullptr;
  const tokenizer::Tokenizer* tok = nullptr;
  std::shared_ptr<EventQueue> queue = std::make_shared<EventQueue>();
  std::vector<uint64_t> ids;  // accepted submissions
  ResponseContext ctx;
  bool stream = false;
  bool echo = false;
  int logprobs = -1;
  int n = 1;
  int n_subs = 0;
  std::vector<std::string> echo_texts;  // [n_subs]
  std::vector<ChoiceOutput> outputs;    // [n_subs * n] non-streaming
  std::vector<int64_t> offsets;         // [n_subs * n] streaming logprobs text offsets
  // Chat: the output is read back in this format (reasoning split unless
  // reasoning_format is kNone; tool calls parsed when the request has tools).
  chat::ChatFormat format;
  chat::ReasoningFormat reasoning_format = chat::ReasoningFormat::kNone;
  bool parse_tools = false;
  bool reasoning_open = false;  // the prompt opened the reasoning block
  Json tools;
  bool parallel_tool_calls = true;

  chat::ChatParser make_parser() const {
    return chat::ChatParser(format, reasoning_format, reasoning_open, parse_tools, &tools);
  }
  bool parses() const { return ctx.kind == ApiKind::kChat && make_parser().splits(); }

  void cancel_all() {
    for (uint64_t id : ids) service->cancel(id);
  }

  void set_waker(std::function<void()> wake) override { queue->set_waker(std::move(wake)); }

  void cancel() override {
    if (ended_) return;
    ended_ = true;
    cancel_all();
  }

  Progress poll() override {
    Progress p;
    if (ended_) return p;
    queue->take(&events_);
    return stream ? poll_stream() : poll_body();
  }

 private:
  // --- non-streaming -------------------------------------------------------

  void collect(const RequestEvent& e) {
    if (!e.done) {
      ChoiceOutput& out = outputs[e.sub * n + e.token.choice];
      out.text += e.token.text;
      if (logprobs >= 0) out.tokens.push_back(e.token.token);
      return;
    }
    ++done_subs_;
    if (auto f = failure_of(e.result); f && !failure_) failure_ = std::move(f);
    count_usage(e.result);
    for (size_t c = 0; c < e.result.choices.size() && static_cast<int>(c) < n; ++c) {
      ChoiceOutput& out = outputs[e.sub * n + c];
      out.text += e.result.choices[c].tail;
      out.kept_tokens = e.result.choices[c].kept_tokens;
      out.finish_reason = finish_reason_name(e.result.choices[c].stop);
    }
  }

  Progress poll_body() {
    Progress p;
    for (const RequestEvent& e : events_) collect(e);
    if (done_subs_ < n_subs && !failure_) return p;
    if (failure_) return fail(*failure_);
    if (parses()) {
      for (ChoiceOutput& out : outputs) {
        chat::ChatDelta d = chat::ChatParser::parse_all(format, reasoning_format, reasoning_open,
                                                        parse_tools, &tools, out.text);
        out.tool_calls = std::move(d.calls);
        if (!parallel_tool_calls && out.tool_calls.size() > 1) out.tool_calls.resize(1);
        out.text = std::move(d.content);
        out.reasoning = std::move(d.reasoning);
        // A reply cut by max_tokens says so, as OpenAI's does, even with a
        // call (whose arguments may then be cut short too).
        if (!out.tool_calls.empty() && out.finish_reason != "length") {
          out.finish_reason = "tool_calls";
        }
      }
    }
    ended_ = true;
    p.head = true;
    p.finished = true;
    p.status = 200;
    p.content_type = "application/json";
    p.data = dump_json(response_body(ctx, outputs, usage_, *tok, logprobs >= 0));
    return p;
  }

  // The request failed before any of its answer went out: the failure's
  // own status and error body; the other submissions are cancelled.
  Progress fail(const ApiError& e) {
    Progress p;
    cancel_all();
    ended_ = true;
    p.head = true;
    p.finished = true;
    p.status = e.http_status;
    p.content_type = "application/json";
    p.data = e.body();
    return p;
  }

  void count_usage(const RequestResult& r) {
    usage_.prompt_tokens += r.prompt_tokens;
    usage_.cached_tokens += r.cached_prompt_tokens;
    usage_.completion_tokens += r.completion_tokens;
  }

  // --- streaming -----------------------------------------------------------

  Progress poll_stream() {
    Progress p;
    if (!head_) {
      // The head goes out at once, as every OpenAI-style server sends it:
      // a client with a read timeout sees the stream open while its
      // request waits for a slot. A failure from here on is an error event.
      head_ = true;
      held_.resize(static_cast<size_t>(n_subs * n));
      emitted_.assign(static_cast<size_t>(n_subs * n), 0);
      if (parses()) {
        parsers_.assign(static_cast<size_t>(n_subs * n), make_parser());
        n_calls_.assign(static_cast<size_t>(n_subs * n), 0);
      }
      p.head = true;
      p.streaming = true;
      p.status = 200;
      p.content_type = "text/event-stream";
      p.headers.emplace_back("Cache-Control", "no-cache");
      for (int s = 0; s < n_subs; ++s) {
        for (int c = 0; c < n; ++c) {
          const int index = s * n + c;
          if (ctx.kind == ApiKind::kChat) {
            emit(&p.data, index, /*role=*/true, "", nullptr, nullptr);
          } else if (echo && !echo_texts[s].empty()) {
            emit(&p.data, index, false, echo_texts[s], nullptr, nullptr);
          }
        }
      }
    }
    p.data += format_events();
    if (done_subs_ == n_subs) {
      ended_ = true;
      p.finished = true;
      if (ctx.include_usage) p.data += sse_event(usage_chunk(ctx, usage_));
      p.data += kSseDone;
    }
    return p;
  }

  void emit(std::string* out, int index, bool role, std::string_view text, Json lp,
            const char* finish) {
    *out += sse_event(stream_chunk(ctx, index, role, text, std::move(lp), finish));
  }

  void flush_pending(std::string* out, const char* finish = nullptr) {
    if (!pending_) return;
    emit(out, pending_->index, false, pending_->text, std::move(pending_->logprobs), finish);
    pending_.reset();
  }

  // Tool-call deltas of choice `index`, a chunk each (calls past the first
  // with parallel_tool_calls false: dropped).
  void emit_calls(std::string* out, int index, const std::vector<chat::ToolCallDelta>& deltas) {
    for (const chat::ToolCallDelta& d : deltas) {
      if (!parallel_tool_calls && d.index > 0) continue;
      *out += sse_event(tool_call_delta_chunk(ctx, index, d));
      if (d.first) ++n_calls_[index];
    }
  }

  // Logprobs of choice `index`'s held tokens up to `kept` of its tokens in
  // all (null when there are none): tokens go out once the engine knows no
  // stop string can cut them, and the ones it cuts never do.
  Json release_logprobs(int index, int64_t kept) {
    std::vector<SampledToken>& held = held_[index];
    const int64_t n_out =
        std::clamp<int64_t>(kept - emitted_[index], 0, static_cast<int64_t>(held.size()));
    if (n_out == 0) return nullptr;
    Json lp = logprobs_json(ctx.kind, *tok,
                            std::span<const SampledToken>(held.data(), static_cast<size_t>(n_out)),
                            &offsets[index]);
    held.erase(held.begin(), held.begin() + n_out);
    emitted_[index] += n_out;
    return lp;
  }

  std::string format_events() {
    std::string out;
    for (RequestEvent& e : events_) {
      if (!e.done) {
        const int index = e.sub * n + e.token.choice;
        Json lp = nullptr;
        if (logprobs >= 0) {
          held_[index].push_back(e.token.token);
          lp = release_logprobs(index, e.token.kept_tokens);
        }
        std::string text = std::move(e.token.text);
        if (!parsers_.empty()) {
          chat::ChatDelta d;
          parsers_[index].feed(text, &d);
          text = std::move(d.content);
          if (!d.reasoning.empty()) {
            flush_pending(&out);
            out += sse_event(reasoning_chunk(ctx, index, d.reasoning));
          }
          if (!d.call_deltas.empty()) {
            flush_pending(&out);
            // Content before a new call goes out ahead of it; content after
            // the pieces of a call already open follows them.
            if (d.call_deltas.front().first && !text.empty()) {
              emit(&out, index, false, text, std::move(lp), nullptr);
              text.clear();
              lp = nullptr;
            }
            emit_calls(&out, index, d.call_deltas);
          }
        }
        if (text.empty() && lp.is_null()) continue;  // nothing to say yet
        flush_pending(&out);
        pending_ = PendingChunk{index, std::move(text), std::move(lp)};
        continue;
      }
      ++done_subs_;
      count_usage(e.result);
      if (auto f = failure_of(e.result)) {
        flush_pending(&out);
        out += sse_event(f->to_json());
        continue;
      }
      for (size_t c = 0; c < e.result.choices.size() && static_cast<int>(c) < n; ++c) {
        const ChoiceResult& r = e.result.choices[c];
        const int index = e.sub * n + static_cast<int>(c);
        const char* finish = finish_reason_name(r.stop);
        Json lp = logprobs >= 0 ? release_logprobs(index, r.kept_tokens) : Json(nullptr);
        held_[index].clear();
        std::string tail = r.tail;
        if (!parsers_.empty()) {
          chat::ChatDelta d;
          parsers_[index].feed(tail, &d);
          parsers_[index].finish(&d);
          tail = std::move(d.content);
          if (!d.reasoning.empty()) {
            flush_pending(&out);
            out += sse_event(reasoning_chunk(ctx, index, d.reasoning));
          }
          if (!d.call_deltas.empty() || !tail.empty() || !lp.is_null()) {
            flush_pending(&out);
            if (!tail.empty() || !lp.is_null()) emit(&out, index, false, tail, std::move(lp), nullptr);
            emit_calls(&out, index, d.call_deltas);
            tail.clear();
          }
          if (n_calls_[index] > 0 && std::string_view(finish) != "length") finish = "tool_calls";
        }
        if (pending_ && pending_->index == index && tail.empty() && lp.is_null()) {
          flush_pending(&out, finish);
        } else {
          flush_pending(&out);
          emit(&out, index, false, tail, std::move(lp), finish);
        }
      }
    }
    flush_pending(&out);
    return out;
  }

  bool ended_ = false;  // finished or cancelled: poll() has nothing more
  bool head_ = false;   // streaming: the head went out
  int done_subs_ = 0;
  Usage usage_;
  std::optional<ApiError> failure_;
  std::vector<RequestEvent> events_;             // scratch
  std::optional<PendingChunk> pending_;          // streaming
  std::vector<std::vector<SampledToken>> held_;  // [n_subs * n] streaming, logprobs not yet out
  std::vector<int64_t> emitted_;                 // [n_subs * n] streaming, tokens whose logprobs went out
  std::vector<chat::ChatParser> parsers_;        // [n_subs * n] streaming, output read back
  std::vector<int> n_calls_;                     // [n_subs * n] streaming, calls sent
};

// --- request preparation -----------------------------------------------------

// The format the served model's replies are read back in.
chat::ChatFormat served_chat_format(const ServedModel& m) {
  if (m.chat_format) return *m.chat_format;
  return chat::detect_chat_format(m.chat_template->source());
}

bool render_chat(const ServedModel& m, const OpenAiRequest& r, Submission* sub, ApiError* err) {
  const chat::ChatFormat format = served_chat_format(m);
  chat::ChatTemplateOptions o;
  o.add_generation_prompt = r.add_generation_prompt;
  o.tools = r.tools;
  o.kwargs = r.chat_template_kwargs;
  // The request's budget wins over the server's; request kwargs win over
  // both.
  const int budget = r.reasoning_budget_tokens.value_or(m.reasoning_budget);
  if (budget == 0 && !o.kwargs.contains("enable_thinking")) {
    o.kwargs["enable_thinking"] = false;
  }
  if (!r.reasoning_effort.empty() && !o.kwargs.contains("reasoning_effort")) {
    o.kwargs["reasoning_effort"] = r.reasoning_effort;
  }
  Json messages = r.messages;
  chat::route_reasoning_field(format, &messages);
  chat::route_call_arguments(format, &messages);
  // Phi-4-mini's template reads the tools from the system message and shows
  // no calls: the messages carry both (chat/phi4_tools.h).
  if (format.tool_calls == chat::ToolCallFormat::kPhi4Mini && r.tools.is_array() &&
      !r.tools.empty()) {
    messages = chat::phi4_tool_messages(messages, r.tools);
    o.tools = nullptr;
  }
  // The generic tool format: the tools are described in the messages, not
  // by the template (chat/generic_tools.h).
  const bool generic =
      format.tool_calls == chat::ToolCallFormat::kGeneric && r.tools.is_array() && !r.tools.empty();
  chat::GenericToolOptions go;
  if (generic) {
    go.allow_response = r.tool_choice.mode == ToolChoiceMode::kAuto;
    if (r.tool_choice.mode == ToolChoiceMode::kNamed) go.only_tool = r.tool_choice.name;
    go.parallel = r.parallel_tool_calls;
    o.tools = nullptr;
  }
  Result<ChatPrompt> prompt =
      generic
          ? render_chat_prompt(*m.chat_template, *m.tokenizer,
                               chat::generic_tool_messages(messages, r.tools, go, false), o,
                               m.special_in_content)
          : render_chat_prompt(*m.chat_template, *m.tokenizer, messages, o, m.special_in_content);
  if (generic && !prompt.ok()) {
    // A template that refuses a system role gets the tools in the first user
    // message.
    prompt = render_chat_prompt(*m.chat_template, *m.tokenizer,
                                chat::generic_tool_messages(messages, r.tools, go, true), o,
                                m.special_in_content);
  }
  if (!prompt.ok()) {
    *err = bad_request(fmt::format("cannot apply the chat template: {}", prompt.status().message()),
                       "messages");
    return false;
  }
  sub->reasoning_open = chat::prompt_opens_reasoning(format.reasoning, prompt->text);
  if (const chat::ReasoningMarkers mk = chat::reasoning_markers(format.reasoning);
      budget >= 0 && !mk.close.empty()) {
    // Past the budget the engine writes the close marker, spelled with the
    // model's tokens (control tokens where the vocabulary has them). Budget
    // 0 too: a template that ignores enable_thinking (or opens the block in
    // its prompt) gets the block closed at once, as llama.cpp does.
    auto spec = std::make_shared<ReasoningBudgetSpec>();
    spec->tokens = budget;
    spec->open = mk.open;
    spec->close = mk.close;
    spec->forced = m.tokenizer->tokenize(mk.close, {.add_special = false, .parse_special = true});
    spec->starts_inside = sub->reasoning_open;
    if (spec->forced.empty()) {
      *err = internal_server_error(
          fmt::format("the reasoning close marker '{}' tokenizes to nothing", mk.close));
      return false;
    }
    sub->reasoning_budget = std::move(spec);
  }
  tokenizer::TokenizeOptions to;
  to.add_special = false;  // the template writes BOS itself where the model wants it
  to.parse_special = true;  // the template's markup; the request's own text stays text
  to.literal_spans = prompt->literal;
  sub->tokens = m.tokenizer->tokenize(prompt->text, to);
  const auto& vocab = m.tokenizer->vocab();
  if (vocab.add_bos() && vocab.bos() >= 0 &&
      (sub->tokens.empty() || sub->tokens.front() != vocab.bos())) {
    sub->tokens.insert(sub->tokens.begin(), vocab.bos());
  }
  return true;
}

bool prepare_submissions(const ServedModel& m, const OpenAiRequest& r,
                         std::vector<Submission>* subs, ApiError* err) {
  if (r.kind == ApiKind::kChat) {
    subs->emplace_back();
    if (!render_chat(m, r, &subs->back(), err)) return false;
  } else {
    tokenizer::TokenizeOptions to;
    to.add_special = true;
    to.parse_special = true;
    for (size_t i = 0; i < r.prompts.size(); ++i) {
      const PromptInput& p = r.prompts[i];
      Submission s;
      if (p.is_tokens) {
        for (int32_t t : p.tokens) {
          if (t >= m.n_vocab || !m.tokenizer->vocab().valid(t)) {
            *err =
                bad_request(fmt::format("prompt token {} is outside the vocabulary [0, {})", t,
                                        std::min<int32_t>(m.n_vocab, m.tokenizer->vocab().size())),
                            "prompt");
            return false;
          }
        }
        s.tokens = p.tokens;
        if (r.echo) s.echo_text = m.tokenizer->detokenize(s.tokens);
      } else {
        s.tokens = m.tokenizer->tokenize(p.text, to);
        if (r.echo) s.echo_text = p.text;
      }
      subs->push_back(std::move(s));
    }
  }
  for (size_t i = 0; i < subs->size(); ++i) {
    const int64_t n_prompt = static_cast<int64_t>((*subs)[i].tokens.size());
    if (n_prompt == 0) {
      *err = bad_request(subs->size() > 1 ? fmt::format("prompt {} has no tokens", i)
                                          : std::string("the prompt has no tokens"),
                         r.kind == ApiKind::kChat ? "messages" : "prompt");
      return false;
    }
    if (n_prompt >= m.n_ctx) {
      *err = too_large_error(
          fmt::format("the prompt{} has {} tokens but the context holds {} (no room to generate)",
                      subs->size() > 1 ? fmt::format(" {}", i) : std::string(), n_prompt, m.n_ctx),
          "context_length_exceeded");
      return false;
    }
  }
  return true;
}

// Everything before submission: the model name, the sampling parameters,
// the prompts, the output grammar and the chat format.
bool prepare_generation(const ServedModel& m, const OpenAiRequest& r,
                        std::vector<Submission>* subs,
                        std::shared_ptr<const grammar::CompiledGrammar>* grammar,
                        grammar::GrammarTriggers* triggers, chat::ChatFormat* format,
                        ApiError* err) {
  if (!r.model.empty() && r.model != m.id) {
    *err = not_found_error(
        fmt::format("The model '{}' does not exist; this server serves '{}'", r.model, m.id),
        "model_not_found");
    return false;
  }
  if (Status s = r.params.validate(m.n_vocab); !s.ok()) {
    *err = bad_request(s.message());
    return false;
  }
  if (!prepare_submissions(m, r, subs, err)) return false;
  // The grammar the output follows (structured outputs, a required tool
  // call); compiled once here, shared by every choice.
  const bool has_tools = r.kind == ApiKind::kChat && r.tools.is_array() && !r.tools.empty();
  *format = r.kind == ApiKind::kChat ? served_chat_format(m) : chat::ChatFormat{};
  const chat::ToolCallFormat tool_format =
      has_tools ? format->tool_calls : chat::ToolCallFormat::kNone;
  if (!output_grammar(r, tool_format, grammar, err, format->reasoning,
                      r.kind == ApiKind::kChat && subs->front().reasoning_open, triggers)) {
    return false;
  }
  // A lazy grammar's trigger words that are one token of the vocabulary
  // (control tokens mostly) trigger as that token too.
  for (const std::string& w : triggers->words) {
    const tokenizer::TokenId id = m.tokenizer->vocab().find(w);
    if (id != tokenizer::kNoToken) triggers->tokens.push_back(id);
  }
  return true;
}

// Submits one prompt with its n choices; its events reach `queue` as
// submission `sub`.
Result<uint64_t> submit_prompt(const ServedModel& m, const OpenAiRequest& r, int sub,
                               std::vector<int32_t> tokens,
                               std::shared_ptr<const grammar::CompiledGrammar> grammar,
                               const grammar::GrammarTriggers& triggers, bool render_special,
                               std::shared_ptr<const ReasoningBudgetSpec> reasoning_budget,
                               const std::shared_ptr<EventQueue>& queue) {
  GenerationRequest g;
  g.params = r.params;
  // Generation stops at the end of the context anyway; asking for more
  // than fits is not an error (llama.cpp's behaviour).
  const int64_t room = m.n_ctx - static_cast<int64_t>(tokens.size());
  if (g.params.max_tokens < 0 || g.params.max_tokens > room) {
    g.params.max_tokens = static_cast<int32_t>(room);
  }
  g.prompt = std::move(tokens);
  g.n = r.n;
  g.priority = r.priority;
  g.ignore_eos = r.ignore_eos;
  g.speculative = r.speculative;
  g.render_special = render_special;
  g.grammar = std::move(grammar);
  g.grammar_triggers = triggers;
  g.reasoning_budget = std::move(reasoning_budget);
  RequestCallbacks cb;
  cb.on_token = [queue, sub](const TokenEvent& t) {
    RequestEvent e;
    e.sub = sub;
    e.token = t;
    queue->push(std::move(e));
  };
  cb.on_done = [queue, sub](const RequestResult& result) {
    RequestEvent e;
    e.sub = sub;
    e.done = true;
    e.result = result;
    queue->push(std::move(e));
  };
  return m.service->submit(std::move(g), std::move(cb));
}

}  // namespace

bool prompt_token_ids(const ServedModel& m, ApiKind kind, const Json& body,
                      std::vector<std::vector<int32_t>>* out, ApiError* err) {
  OpenAiRequest r;
  if (!parse_openai_request(body, kind, &r, err)) return false;
  return prompt_token_ids(m, r, out, err);
}

bool prompt_token_ids(const ServedModel& m, const OpenAiRequest& r,
                      std::vector<std::vector<int32_t>>* out, ApiError* err) {
  if (r.kind == ApiKind::kChat && m.chat_template == nullptr) {
    *err = bad_request(
        fmt::format("the model '{}' is an embedding model: it has no chat template", m.id),
        "messages");
    return false;
  }
  if (!r.model.empty() && r.model != m.id) {
    *err = not_found_error(
        fmt::format("The model '{}' does not exist; this server serves '{}'", r.model, m.id),
        "model_not_found");
    return false;
  }
  std::vector<Submission> subs;
  if (!prepare_submissions(m, r, &subs, err)) return false;
  for (Submission& s : subs) out->push_back(std::move(s.tokens));
  return true;
}

HttpReply handle_render(const ServedModel& m, ApiKind kind, const std::string& body) {
  Json j;
  ApiError err;
  if (!parse_json_body(body, &j, &err)) return err.reply();
  std::vector<std::vector<int32_t>> prompts;
  if (!prompt_token_ids(m, kind, j, &prompts, &err)) return err.reply();
  if (kind == ApiKind::kChat) return json_reply(200, Json{{"token_ids", prompts.front()}});
  Json list = Json::array();
  for (const auto& p : prompts) list.push_back(Json{{"token_ids", p}});
  return json_reply(200, list);
}

bool submit_chat(const ServedModel& m, const OpenAiRequest& r, ChatSubmission* out,
                 ApiError* err) {
  if (r.kind != ApiKind::kChat || r.n != 1) {
    *err = internal_server_error("submit_chat takes a chat request with one choice");
    return false;
  }
  std::vector<Submission> subs;
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  grammar::GrammarTriggers triggers;
  if (!prepare_generation(m, r, &subs, &grammar, &triggers, &out->format, err)) return false;
  out->reasoning_open = subs.front().reasoning_open;
  out->parse_tools = r.tools.is_array() && !r.tools.empty();
  out->prompt_tokens = static_cast<int64_t>(subs.front().tokens.size());
  const bool parses = chat::ChatParser(out->format, m.reasoning_format, out->reasoning_open,
                                       out->parse_tools, &r.tools)
                          .splits();
  Result<uint64_t> id = submit_prompt(m, r, 0, std::move(subs.front().tokens), std::move(grammar),
                                      triggers, parses && out->format.markers_are_special(),
                                      subs.front().reasoning_budget, out->queue);
  if (!id.ok()) {
    *err = api_error_from_status(id.status());
    return false;
  }
  out->id = *id;
  return true;
}

RouteResult handle_generation(const ServedModel& m, ApiKind kind, const std::string& body) {
  Json j;
  ApiError err;
  if (!parse_json_body(body, &j, &err)) return err.reply();
  OpenAiRequest r;
  if (!parse_openai_request(j, kind, &r, &err)) return err.reply();
  std::vector<Submission> subs;
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  grammar::GrammarTriggers triggers;
  chat::ChatFormat format;
  if (!prepare_generation(m, r, &subs, &grammar, &triggers, &format, &err)) return err.reply();
  const bool has_tools = kind == ApiKind::kChat && r.tools.is_array() && !r.tools.empty();

  auto job = std::make_shared<GenerationReply>();
  job->service = m.service;
  job->tok = m.tokenizer;
  job->ctx.kind = kind;
  job->ctx.id = make_response_id(kind);
  job->ctx.created = static_cast<int64_t>(std::time(nullptr));
  job->ctx.model = m.id;
  job->ctx.include_usage = r.stream && r.include_usage;
  job->stream = r.stream;
  if (kind == ApiKind::kChat) {
    job->format = format;
    job->reasoning_format = m.reasoning_format;
    job->reasoning_open = subs.front().reasoning_open;
  }
  if (has_tools) {
    job->parse_tools = true;
    job->tools = r.tools;
    job->parallel_tool_calls = r.parallel_tool_calls;
  }
  job->echo = r.echo;
  job->logprobs = r.logprobs;
  job->n = r.n;
  job->n_subs = static_cast<int>(subs.size());
  job->outputs.resize(subs.size() * r.n);
  job->offsets.assign(subs.size() * r.n, 0);
  for (size_t s = 0; s < subs.size(); ++s) {
    job->echo_texts.push_back(subs[s].echo_text);
    for (int c = 0; c < r.n; ++c) {
      ChoiceOutput& out = job->outputs[s * r.n + c];
      out.text = subs[s].echo_text;
      out.text_offset_base = static_cast<int64_t>(subs[s].echo_text.size());
      job->offsets[s * r.n + c] = out.text_offset_base;
    }
  }

  for (size_t s = 0; s < subs.size(); ++s) {
    const int64_t n_prompt = static_cast<int64_t>(subs[s].tokens.size());
    if (r.params.max_tokens == 0) {  // echo-only completions: nothing to generate
      RequestEvent e;
      e.sub = static_cast<int>(s);
      e.done = true;
      e.result.prompt_tokens = n_prompt;
      e.result.choices.resize(r.n);
      job->queue->push(std::move(e));
      continue;
    }
    // The format's markers are control tokens: the text must show them.
    Result<uint64_t> id = submit_prompt(
        m, r, static_cast<int>(s), std::move(subs[s].tokens), grammar, triggers,
        job->parses() && format.markers_are_special(), subs[s].reasoning_budget, job->queue);
    if (!id.ok()) {
      job->cancel_all();
      return api_error_from_status(id.status()).reply();
    }
    job->ids.push_back(*id);
  }

  return std::shared_ptr<AsyncReply>(std::move(job));
}

}  // namespace folio::server
