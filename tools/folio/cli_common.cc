#include "cli_common.h"

#include <algorithm>
#include <climits>
#include <cstdio>

#include "backend/cpu/cpu_buffer_types.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "tensor/dtype.h"

namespace folio::tools {

void add_model_flags(CLI::App* cmd, ModelFlags* f) {
  cmd->add_option("-m,--model", f->model, "GGUF model file")->required();
  cmd->add_option("-t,--threads", f->threads, "threads (default: all cores)");
  cmd->add_option("-c,--ctx-size", f->ctx_size, "context size in tokens (capped by the model's)")
      ->capture_default_str();
  cmd->add_option("--kv-type", f->kv_type, "KV cache type: f32|f16|bf16|q8_0")->capture_default_str();
  cmd->add_option("-b,--batch-size", f->batch_size, "prefill chunk in tokens")->capture_default_str();
  cmd->add_option("--kv-block-size", f->kv_block_size, "KV block: 8..128 tokens, a power of 2")
      ->capture_default_str();
  CLI::Option* blocks =
      cmd->add_option("--kv-blocks", f->kv_blocks, "KV pool size in blocks (default: the context)");
  cmd->add_option("--kv-memory", f->kv_memory_mib, "KV pool size in MiB")->excludes(blocks);
  cmd->add_flag("--no-repack", f->no_repack,
                "keep weights in their GGUF layout (no AMX / repacked buffers)");
}

std::vector<const BufferType*> weight_buffer_types(bool no_repack, std::FILE* log) {
  if (log != nullptr) {
    std::fprintf(log, "folio: %s\n", cpu_weight_buffer_note(active_isa(), !no_repack).c_str());
  }
  return cpu_weight_buffer_types(active_isa(), !no_repack);
}

void add_sampling_flags(CLI::App* cmd, SamplingFlags* f) {
  SamplingParams& p = f->params;
  cmd->add_option("--temp", p.temperature, "temperature (0 = greedy)")->capture_default_str();
  cmd->add_option("--top-k", p.top_k, "top-k sampling (0 = off)")->capture_default_str();
  cmd->add_option("--top-p", p.top_p, "top-p sampling (1 = off)")->capture_default_str();
  cmd->add_option("--min-p", p.min_p, "min-p sampling (0 = off)")->capture_default_str();
  cmd->add_option("--repeat-penalty", p.repetition_penalty, "repetition penalty (1 = off)")
      ->capture_default_str();
  cmd->add_option("--repeat-last-n", p.penalty_last_n, "penalty window (-1 = all, 0 = off)")
      ->capture_default_str();
  cmd->add_option("--presence-penalty", p.presence_penalty, "presence penalty")->capture_default_str();
  cmd->add_option("--frequency-penalty", p.frequency_penalty, "frequency penalty")->capture_default_str();
  cmd->add_option("-s,--seed", f->seed, "RNG seed (-1 = random)")->capture_default_str();
  cmd->add_option("-r,--reverse-prompt,--stop", p.stop, "stop generating at this text (repeatable)");
}

Result<SamplingParams> sampling_params(const SamplingFlags& f, int32_t n_vocab) {
  SamplingParams p = f.params;
  if (f.seed >= 0) p.seed = static_cast<uint64_t>(f.seed);
  FOLIO_RETURN_IF_ERROR(p.validate(n_vocab));
  return p;
}

namespace {

// n_seq: sequences created up front. n_parallel > 0: without --kv-blocks /
// --kv-memory, a pool of n_parallel contexts (instead of n_seq's).
Result<LoadedModel> load_model(const ModelFlags& f, int n_seq, int n_parallel) {
  Result<DType> kv = cache::parse_kv_type(f.kv_type);
  if (!kv.ok()) return kv.status().with_context("--kv-type");
  if (f.threads < 0) return invalid_argument("--threads must be >= 0, got {}", f.threads);
  if (f.ctx_size < 1) return invalid_argument("--ctx-size must be >= 1, got {}", f.ctx_size);
  if (f.batch_size < 1) return invalid_argument("--batch-size must be >= 1, got {}", f.batch_size);
  LoadedModel lm;
  model::LoadOptions lo;
  lo.log = stderr;
  lo.buffer_types = weight_buffer_types(f.no_repack, stderr);
  FOLIO_ASSIGN_OR_RETURN(lm.model, model::Model::load(f.model, lo));
  FOLIO_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok, tokenizer::Tokenizer::from_gguf(lm.model->file()));
  lm.tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tok));
  lm.ctx = model::ForwardContext::cpu(f.threads > 0 ? f.threads : default_thread_count());
  cache::KvCacheOptions co;
  const int64_t train_ctx = lm.model->config().n_ctx_train;
  co.n_ctx = train_ctx > 0 ? std::min(f.ctx_size, train_ctx) : f.ctx_size;
  co.n_seq = n_seq;
  co.type = *kv;
  co.storage = cache::KvStorage::kPaged;
  co.block_size = f.kv_block_size;
  co.n_blocks = f.kv_blocks;
  co.memory_mib = f.kv_memory_mib;
  if (n_parallel > 0 && f.kv_blocks == 0 && f.kv_memory_mib == 0 && f.kv_block_size > 0) {
    const int64_t per_seq = (co.n_ctx + f.kv_block_size - 1) / f.kv_block_size;
    co.n_blocks = static_cast<int32_t>(std::min<int64_t>(n_parallel * per_seq + 1, INT32_MAX));
  }
  co.max_seqs = std::max({n_seq, n_parallel, 1});  // hybrid models: recurrent state per sequence
  Result<std::unique_ptr<cache::KvCache>> cache = lm.model->make_cache(co);
  if (!cache.ok()) return cache.status().with_context("KV cache");
  std::fprintf(stderr, "folio: context %lld tokens, KV cache %s, %s, %d threads\n",
               static_cast<long long>(co.n_ctx), dtype_name(co.type), (*cache)->summary().c_str(),
               lm.ctx->n_threads());
  lm.cache = std::move(cache).value();
  return lm;
}

}  // namespace

Result<LoadedModel> load_for_generation(const ModelFlags& f) { return load_model(f, 1, 0); }

tokenizer::ChatTemplate pick_chat_template(const LoadedModel& lm) {
  // Gemma's turn format, written for folio: system text joins the first user
  // turn, assistant turns are "model" turns.
  static constexpr std::string_view kGemmaTemplate =
      "{{ bos_token }}{% set ns = namespace(sys='') %}"
      "{% for m in messages %}{% if m['role'] == 'system' %}"
      "{% set ns.sys = m['content'] ~ '\n\n' %}"
      "{% else %}{% set role = 'model' if m['role'] == 'assistant' else m['role'] %}"
      "<start_of_turn>{{ role }}\n{{ ns.sys if role == 'user' else '' }}"
      "{{ m['content'] | trim }}<end_of_turn>\n"
      "{% if role == 'user' %}{% set ns.sys = '' %}{% endif %}{% endif %}{% endfor %}"
      "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}";
  const auto& vocab = lm.tokenizer->vocab();
  const bool has_template = lm.model->file().has("tokenizer.chat_template");
  if (!has_template && lm.model->config().arch.rfind("gemma", 0) == 0) {
    auto t = tokenizer::ChatTemplate::parse(kGemmaTemplate, lm.tokenizer->piece(vocab.bos(), true),
                                            lm.tokenizer->piece(vocab.eos(), true));
    if (t.ok()) return std::move(t).value();
  }
  return tokenizer::ChatTemplate::from_gguf(lm.model->file(), vocab);
}

Result<LoadedModel> load_for_batch(const ModelFlags& f, int n_parallel) {
  if (n_parallel < 1) return invalid_argument("--parallel must be >= 1, got {}", n_parallel);
  return load_model(f, 0, n_parallel);
}

}  // namespace folio::tools
