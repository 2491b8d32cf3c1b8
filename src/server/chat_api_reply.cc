#include "server/chat_api_reply.h"

#include <algorithm>
#include <optional>

#include "server/event_queue.h"

namespace folio::server {

std::string matched_stop_sequence(std::string_view full, const std::vector<std::string>& stops) {
  size_t best_pos = std::string_view::npos;
  const std::string* best = nullptr;
  for (const std::string& s : stops) {
    if (s.empty()) continue;
    const size_t pos = full.find(s);
    if (pos == std::string_view::npos) continue;
    if (best == nullptr || pos < best_pos || (pos == best_pos && s.size() < best->size())) {
      best_pos = pos;
      best = &s;
    }
  }
  return best != nullptr ? *best : std::string();
}

namespace {

class ChatApiReply final : public AsyncReply {
 public:
  ChatApiReply(const ServedModel& m, ChatSubmission sub, Json tools, ChatApiReplyOptions options,
               std::unique_ptr<ChatApiWriter> writer)
      : service_(m.service),
        tok_(m.tokenizer),
        sub_(std::move(sub)),
        tools_(std::move(tools)),
        options_(std::move(options)),
        writer_(std::move(writer)),
        parser_(sub_.format, m.reasoning_format, sub_.reasoning_open, sub_.parse_tools, &tools_),
        reasoning_format_(m.reasoning_format) {}

  void set_waker(std::function<void()> wake) override { sub_.queue->set_waker(std::move(wake)); }

  void cancel() override {
    if (ended_) return;
    ended_ = true;
    service_->cancel(sub_.id);
  }

  Progress poll() override {
    Progress p;
    if (ended_) return p;
    sub_.queue->take(&events_);
    return options_.stream ? poll_stream() : poll_body();
  }

 private:
  // The engine's end that is not a normal finish.
  static std::optional<ApiError> failure_of(const RequestResult& r) {
    if (!r.status.ok()) return api_error_from_status(r.status);
    if (r.choices.empty()) return internal_server_error("the generation ended without a choice");
    if (r.choices.front().stop == StopReason::kCancelled) {
      return unavailable_error("the request was cancelled: the server is stopping");
    }
    return std::nullopt;
  }

  void finish_outcome(const RequestResult& r) {
    const ChoiceResult& c = r.choices.front();
    outcome_.stop = c.stop;
    outcome_.usage.prompt_tokens = r.prompt_tokens;
    outcome_.usage.cached_tokens = r.cached_prompt_tokens;
    outcome_.usage.completion_tokens = r.completion_tokens;
    if (c.stop == StopReason::kStopString && !options_.stop.empty()) {
      outcome_.stop_sequence = matched_stop_sequence(tok_->detokenize(ids_), options_.stop);
    }
  }

  Progress poll_body() {
    Progress p;
    for (RequestEvent& e : events_) {
      if (!e.done) {
        text_ += e.token.text;
        if (!options_.stop.empty()) ids_.push_back(e.token.token.token);
        continue;
      }
      if (auto f = failure_of(e.result)) {
        ended_ = true;
        return as_progress(writer_->error_reply(*f));
      }
      text_ += e.result.choices.front().tail;
      finish_outcome(e.result);
      chat::ChatDelta d = chat::ChatParser::parse_all(
          sub_.format, reasoning_format_, sub_.reasoning_open, sub_.parse_tools, &tools_, text_);
      outcome_.reasoning = std::move(d.reasoning);
      outcome_.content = std::move(d.content);
      outcome_.calls = std::move(d.calls);
      if (!options_.parallel_tool_calls && outcome_.calls.size() > 1) outcome_.calls.resize(1);
      ended_ = true;
      HttpReply reply;
      reply.status = 200;
      reply.content_type = "application/json";
      reply.body = dump_json(writer_->body(outcome_));
      return as_progress(std::move(reply));
    }
    return p;
  }

  static Progress as_progress(HttpReply r) {
    Progress p;
    p.head = true;
    p.finished = true;
    p.status = r.status;
    p.content_type = std::move(r.content_type);
    p.headers = std::move(r.headers);
    p.data = std::move(r.body);
    return p;
  }

  void put(const chat::ChatDelta& d, std::string* out) {
    if (!d.reasoning.empty()) {
      outcome_.reasoning += d.reasoning;
      *out += writer_->stream_reasoning(d.reasoning);
    }
    // A call open from before gets its last pieces and its end ahead of
    // the content that follows it.
    size_t next = 0;  // d.calls[next..] not closed yet
    const bool was_open = call_open_;
    const size_t open_index = n_closed_;
    if (was_open) {
      for (const chat::ToolCallDelta& cd : d.call_deltas) {
        if (cd.index == open_index) put_call_delta(cd, out);
      }
      if (!d.calls.empty()) close_call(d.calls[next++], out);
    }
    if (!d.content.empty()) {
      outcome_.content += d.content;
      *out += writer_->stream_content(d.content);
    }
    for (const chat::ToolCallDelta& cd : d.call_deltas) {
      if (was_open && cd.index == open_index) continue;
      if (cd.first) {
        while (n_closed_ < cd.index && next < d.calls.size()) close_call(d.calls[next++], out);
      }
      put_call_delta(cd, out);
    }
    while (next < d.calls.size()) close_call(d.calls[next++], out);
  }

  // With parallel_tool_calls false, calls past the first are dropped.
  bool call_kept(size_t index) const { return options_.parallel_tool_calls || index == 0; }

  void put_call_delta(const chat::ToolCallDelta& cd, std::string* out) {
    if (cd.first) call_open_ = true;
    if (call_kept(cd.index)) *out += writer_->stream_call_delta(cd);
  }

  void close_call(const chat::ParsedToolCall& call, std::string* out) {
    if (call_kept(n_closed_)) {
      outcome_.calls.push_back(call);
      *out += writer_->stream_call_done(call);
    }
    ++n_closed_;
    call_open_ = false;
  }

  Progress poll_stream() {
    Progress p;
    if (!head_) {
      // The head goes out at once (see GenerationReply): a failure from
      // here on is an error event.
      head_ = true;
      p.head = true;
      p.streaming = true;
      p.status = 200;
      p.content_type = "text/event-stream";
      p.headers.emplace_back("Cache-Control", "no-cache");
      p.data = writer_->stream_start();
    }
    for (RequestEvent& e : events_) {
      chat::ChatDelta d;
      if (!e.done) {
        if (!options_.stop.empty()) ids_.push_back(e.token.token.token);
        parser_.feed(e.token.text, &d);
        put(d, &p.data);
        continue;
      }
      ended_ = true;
      p.finished = true;
      if (auto f = failure_of(e.result)) {
        p.data += writer_->stream_error(*f);
        return p;
      }
      parser_.feed(e.result.choices.front().tail, &d);
      parser_.finish(&d);
      put(d, &p.data);
      finish_outcome(e.result);
      p.data += writer_->stream_end(outcome_);
      return p;
    }
    return p;
  }

  GenerationService* service_;
  const tokenizer::Tokenizer* tok_;
  ChatSubmission sub_;
  Json tools_;  // before parser_: it borrows them
  ChatApiReplyOptions options_;
  std::unique_ptr<ChatApiWriter> writer_;
  chat::ChatParser parser_;  // streaming
  chat::ReasoningFormat reasoning_format_;
  bool ended_ = false;
  bool head_ = false;
  std::string text_;          // non-streaming: the output so far
  std::vector<int32_t> ids_;  // with stop strings: the sampled tokens
  ChatOutcome outcome_;
  size_t n_closed_ = 0;     // streaming: tool calls completed
  bool call_open_ = false;  // streaming: a call started and not completed
  std::vector<RequestEvent> events_;  // scratch
};

}  // namespace

std::shared_ptr<AsyncReply> make_chat_api_reply(const ServedModel& model, ChatSubmission sub,
                                                Json tools, ChatApiReplyOptions options,
                                                std::unique_ptr<ChatApiWriter> writer) {
  return std::make_shared<ChatApiReply>(model, std::move(sub), std::move(tools), std::move(options),
                                        std::move(writer));
}

}  // namespace folio::server
