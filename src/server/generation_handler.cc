// POST /v1/completions and /v1/chat/completions: parse and validate the
// body, render / tokenize the prompts, submit one GenerationRequest per
// prompt (its n choices share the prompt's blocks), then write the answer
// from the request's EventQueue on the connection thread, chunked:
//   streaming      one SSE chunk per token event (finish_reason on the
//                  choice's last content chunk when the end is already
//                  known, else on a final chunk with the held-back tail or
//                  an empty delta), the usage chunk, `data: [DONE]`;
//   non-streaming  one JSON body when every choice has finished.
// Between events the connection checks its socket; a client that left gets
// its requests cancelled (blocks freed before the scheduler's next step).
#include <fmt/format.h>

#include <ctime>
#include <memory>
#include <optional>

#include "core/log.h"
#include "server/event_queue.h"
#include "server/openai_response.h"
#include "server/routes.h"

namespace folio::server {

namespace {

// One submission: a prompt and, for echo, its text.
struct Submission {
  std::vector<int32_t> tokens;
  std::string echo_text;
};

// Everything one HTTP generation request keeps between the handler and its
// content provider (owned through a shared_ptr by the provider and the
// releaser; the scheduler's callbacks only hold the queue).
struct Job {
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
  std::chrono::milliseconds poll{50};

  // Connection-thread state.
  bool started = false;
  bool finished = false;  // every submission reported done (or the job failed)
  int done_subs = 0;
  std::vector<ChoiceOutput> outputs;  // [n_subs * n]
  std::vector<int64_t> offsets;       // [n_subs * n] streaming logprobs text offsets
  Usage usage;
  std::optional<ApiError> failure;
  std::vector<RequestEvent> events;  // scratch

  void cancel_all() {
    for (uint64_t id : ids) service->cancel(id);
  }
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

void count_usage(Job& job, const RequestResult& r) {
  job.usage.prompt_tokens += r.prompt_tokens;
  job.usage.cached_tokens += r.cached_prompt_tokens;
  job.usage.completion_tokens += r.completion_tokens;
}

// --- non-streaming -----------------------------------------------------------

void collect(Job& job, const RequestEvent& e) {
  if (!e.done) {
    ChoiceOutput& out = job.outputs[e.sub * job.n + e.token.choice];
    out.text += e.token.text;
    if (job.logprobs >= 0) out.tokens.push_back(e.token.token);
    return;
  }
  ++job.done_subs;
  if (auto f = failure_of(e.result); f && !job.failure) job.failure = std::move(f);
  count_usage(job, e.result);
  for (size_t c = 0; c < e.result.choices.size() && static_cast<int>(c) < job.n; ++c) {
    ChoiceOutput& out = job.outputs[e.sub * job.n + c];
    out.text += e.result.choices[c].tail;
    out.finish_reason = finish_reason_name(e.result.choices[c].stop);
  }
}

bool provide_body(Job& job, httplib::DataSink& sink) {
  if (!job.queue->wait_take(&job.events, job.poll)) {
    if (!sink.is_writable()) {
      job.cancel_all();
      return false;
    }
    return true;
  }
  for (const RequestEvent& e : job.events) collect(job, e);
  if (job.done_subs < job.n_subs && !job.failure) return true;
  job.finished = true;
  if (job.failure) {
    // The status line (200) is gone already; the body says what happened.
    job.cancel_all();
    const std::string body = job.failure->body();
    sink.write(body.data(), body.size());
    sink.done();
    return true;
  }
  const Json j = response_body(job.ctx, job.outputs, job.usage, *job.tok, job.logprobs >= 0);
  const std::string body = dump_json(j);
  if (!sink.write(body.data(), body.size())) return false;
  sink.done();
  return true;
}

// --- streaming ---------------------------------------------------------------

// The chunk being held so that a done event right behind it can carry
// finish_reason in it.
struct PendingChunk {
  int index = -1;
  std::string text;
  Json logprobs;
};

void emit(Job& job, std::string* out, int index, bool role, std::string_view text, Json logprobs,
          const char* finish) {
  *out += sse_event(stream_chunk(job.ctx, index, role, text, std::move(logprobs), finish));
}

void flush_pending(Job& job, std::optional<PendingChunk>* pending, std::string* out,
                   const char* finish = nullptr) {
  if (!*pending) return;
  emit(job, out, (*pending)->index, false, (*pending)->text, std::move((*pending)->logprobs),
       finish);
  pending->reset();
}

std::string format_events(Job& job) {
  std::string out;
  std::optional<PendingChunk> pending;
  for (RequestEvent& e : job.events) {
    if (!e.done) {
      const int index = e.sub * job.n + e.token.choice;
      Json lp = nullptr;
      if (job.logprobs >= 0) {
        lp = logprobs_json(job.ctx.kind, *job.tok, std::span<const SampledToken>(&e.token.token, 1),
                           &job.offsets[index]);
      }
      if (e.token.text.empty() && lp.is_null()) continue;  // text held back, nothing to say
      flush_pending(job, &pending, &out);
      pending = PendingChunk{index, std::move(e.token.text), std::move(lp)};
      continue;
    }
    ++job.done_subs;
    count_usage(job, e.result);
    if (auto f = failure_of(e.result)) {
      flush_pending(job, &pending, &out);
      out += sse_event(f->to_json());
      if (!job.failure) job.failure = std::move(f);
      continue;
    }
    for (size_t c = 0; c < e.result.choices.size() && static_cast<int>(c) < job.n; ++c) {
      const ChoiceResult& r = e.result.choices[c];
      const int index = e.sub * job.n + static_cast<int>(c);
      const char* finish = finish_reason_name(r.stop);
      if (pending && pending->index == index && r.tail.empty()) {
        flush_pending(job, &pending, &out, finish);
      } else {
        flush_pending(job, &pending, &out);
        emit(job, &out, index, false, r.tail, nullptr, finish);
      }
    }
  }
  flush_pending(job, &pending, &out);
  return out;
}

bool provide_stream(Job& job, httplib::DataSink& sink) {
  if (!job.started) {
    job.started = true;
    std::string out;
    for (int s = 0; s < job.n_subs; ++s) {
      for (int c = 0; c < job.n; ++c) {
        const int index = s * job.n + c;
        if (job.ctx.kind == ApiKind::kChat) {
          emit(job, &out, index, /*role=*/true, "", nullptr, nullptr);
        } else if (job.echo && !job.echo_texts[s].empty()) {
          emit(job, &out, index, false, job.echo_texts[s], nullptr, nullptr);
        }
      }
    }
    if (!out.empty() && !sink.write(out.data(), out.size())) {
      job.cancel_all();
      return false;
    }
    return true;
  }
  if (!job.queue->wait_take(&job.events, job.poll)) {
    if (!sink.is_writable()) {
      job.cancel_all();
      return false;
    }
    return true;
  }
  std::string out = format_events(job);
  const bool all_done = job.done_subs == job.n_subs;
  if (all_done) {
    job.finished = true;
    if (job.ctx.include_usage) out += sse_event(usage_chunk(job.ctx, job.usage));
    out += kSseDone;
  }
  if (!out.empty() && !sink.write(out.data(), out.size())) {
    job.cancel_all();
    return false;
  }
  if (all_done) sink.done();
  return true;
}

// --- request preparation -----------------------------------------------------

bool render_chat(const ServedModel& m, const OpenAiRequest& r, Submission* sub, ApiError* err) {
  tokenizer::ChatTemplateOptions o;
  o.add_generation_prompt = r.add_generation_prompt;
  o.tools = r.tools;
  o.kwargs = r.chat_template_kwargs;
  Result<std::string> text = m.chat_template->apply_json(r.messages, o);
  if (!text.ok()) {
    *err = bad_request(fmt::format("cannot apply the chat template: {}", text.status().message()),
                       "messages");
    return false;
  }
  tokenizer::TokenizeOptions to;
  to.add_special = false;  // the template writes BOS itself where the model wants it
  to.parse_special = true;
  sub->tokens = m.tokenizer->tokenize(*text, to);
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

}  // namespace

void handle_generation(const ServedModel& m, const ServerOptions& options, ApiKind kind,
                       const std::string& body, httplib::Response& res) {
  Json j;
  ApiError err;
  if (!parse_json_body(body, &j, &err)) return send_error(res, err);
  OpenAiRequest r;
  if (!parse_openai_request(j, kind, &r, &err)) return send_error(res, err);
  if (!r.model.empty() && r.model != m.id) {
    return send_error(res, not_found_error(fmt::format("The model '{}' does not exist; this "
                                                       "server serves '{}'",
                                                       r.model, m.id),
                                           "model_not_found"));
  }
  if (Status s = r.params.validate(m.n_vocab); !s.ok()) {
    return send_error(res, bad_request(s.message()));
  }
  std::vector<Submission> subs;
  if (!prepare_submissions(m, r, &subs, &err)) return send_error(res, err);

  auto job = std::make_shared<Job>();
  job->service = m.service;
  job->tok = m.tokenizer;
  job->ctx.kind = kind;
  job->ctx.id = make_response_id(kind);
  job->ctx.created = static_cast<int64_t>(std::time(nullptr));
  job->ctx.model = m.id;
  job->ctx.include_usage = r.stream && r.include_usage;
  job->stream = r.stream;
  job->echo = r.echo;
  job->logprobs = r.logprobs;
  job->n = r.n;
  job->n_subs = static_cast<int>(subs.size());
  job->poll = options.poll_interval;
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
    GenerationRequest g;
    g.params = r.params;
    // Generation stops at the end of the context anyway; asking for more
    // than fits is not an error (llama.cpp's behaviour).
    const int64_t room = m.n_ctx - n_prompt;
    if (g.params.max_tokens < 0 || g.params.max_tokens > room) {
      g.params.max_tokens = static_cast<int32_t>(room);
    }
    if (g.params.max_tokens == 0) {  // echo-only completions: nothing to generate
      RequestEvent e;
      e.sub = static_cast<int>(s);
      e.done = true;
      e.result.prompt_tokens = n_prompt;
      e.result.choices.resize(r.n);
      job->queue->push(std::move(e));
      continue;
    }
    g.prompt = std::move(subs[s].tokens);
    g.n = r.n;
    g.priority = r.priority;
    g.ignore_eos = r.ignore_eos;
    std::shared_ptr<EventQueue> queue = job->queue;
    const int sub = static_cast<int>(s);
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
    Result<uint64_t> id = m.service->submit(std::move(g), std::move(cb));
    if (!id.ok()) {
      job->cancel_all();
      return send_error(res, api_error_from_status(id.status()));
    }
    job->ids.push_back(*id);
  }

  auto releaser = [job](bool /*success*/) {
    // Also on a clean return: a server stopping ends the provider loop early.
    if (!job->finished) job->cancel_all();
  };
  if (r.stream) {
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [job](size_t, httplib::DataSink& sink) { return provide_stream(*job, sink); }, releaser);
  } else {
    res.set_chunked_content_provider(
        "application/json",
        [job](size_t, httplib::DataSink& sink) { return provide_body(*job, sink); }, releaser);
  }
}

}  // namespace folio::server
