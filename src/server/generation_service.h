// GenerationService: what the HTTP layer needs from the engine (submit,
// cancel, metrics), so routes can be tested against a scripted engine as
// well as the real Scheduler (SchedulerService).
#pragma once

#include <optional>
#include <string>

#include "engine/embedder.h"
#include "engine/scheduler.h"
#include "engine/serving_metrics.h"
#include "chat/chat_format.h"
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace folio::server {

class GenerationService {
 public:
  virtual ~GenerationService() = default;
  // Scheduler::submit's contract: errors queue nothing and run no callback;
  // on success on_done runs exactly once.
  virtual Result<uint64_t> submit(GenerationRequest request, RequestCallbacks callbacks) = 0;
  virtual void cancel(uint64_t id) = 0;
  virtual ServingMetrics::Snapshot metrics() const = 0;
};

class SchedulerService final : public GenerationService {
 public:
  explicit SchedulerService(Scheduler& s) : s_(s) {}
  Result<uint64_t> submit(GenerationRequest request, RequestCallbacks callbacks) override {
    return s_.submit(std::move(request), std::move(callbacks));
  }
  void cancel(uint64_t id) override { s_.cancel(id); }
  ServingMetrics::Snapshot metrics() const override { return s_.metrics(); }

 private:
  Scheduler& s_;
};

// The model a server answers for. Everything is borrowed and must outlive
// the server's use of it (HttpServer::stop()).
struct ServedModel {
  std::string id;       // the name in responses and /v1/models
  int64_t n_ctx = 0;    // positions one sequence can hold
  int32_t n_vocab = 0;  // the model's logits width (logit_bias / token id checks)
  const tokenizer::Tokenizer* tokenizer = nullptr;
  const chat::ChatTemplate* chat_template = nullptr;
  // The format replies are read back in (--chat-format); unset: detected
  // from chat_template's source.
  std::optional<chat::ChatFormat> chat_format;
  // --reasoning-format: kNone leaves the reasoning in the content.
  chat::ReasoningFormat reasoning_format = chat::ReasoningFormat::kAuto;
  // --reasoning-budget: -1 unrestricted; 0 renders with enable_thinking
  // false unless the request's chat_template_kwargs set it; N > 0: a
  // reasoning block's close marker is forced after N tokens in it
  // (engine/reasoning_budget.h). A request's reasoning_budget_tokens wins.
  int reasoning_budget = -1;
  GenerationService* service = nullptr;  // null for an embedding model
  Embedder* embedder = nullptr;          // embedding models only: /v1/embeddings
  // Control-token texts in chat content become control tokens (llama.cpp's
  // behaviour; --allow-special-in-content). Off: they stay text, and only
  // the template's markup yields control tokens (server/chat_prompt.h).
  bool special_in_content = false;
};

}  // namespace folio::server
