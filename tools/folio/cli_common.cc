#include "cli_common.h"

#include "cli_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#include "backend/cpu/cpu_buffer_types.h"
#include "cache/block_table.h"
#include "cache/kv_sizing.h"
#include "core/cpu_features.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "engine/draft_vocabulary.h"
#include "tensor/dtype.h"

namespace folio::tools {

namespace {

// A check of an option's text while parsing, so a bad value is refused
// before any model loads; CLI11 prefixes the message with the flag's name.
CLI::Validator number_check(std::function<bool(double)> ok, const std::string& expect) {
  return CLI::Validator(
      [ok, expect](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0') return "expected a number, got '" + text + "'";
        if (!ok(v)) return "must be " + expect + ", got " + text;
        return std::string();
      },
      expect);
}

CLI::Validator at_least(double lo) {
  return number_check([lo](double v) { return v >= lo; }, fmt::format(">= {}", lo));
}

CLI::Validator finite_at_least(double lo) {
  return number_check([lo](double v) { return std::isfinite(v) && v >= lo; },
                      fmt::format("a finite number >= {}", lo));
}

}  // namespace

void add_model_flags(CLI::App* cmd, ModelFlags* f) {
  cmd->add_option("-m,--model", f->model, "GGUF model file")->required();
  cmd->add_option("-t,--threads", f->threads, "threads (0: all cores)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--threads-batch", f->threads_batch,
                  "threads for prompt processing (also -tb; folio uses -t for both)")
      ->check(at_least(0));
  cmd->add_option("-c,--ctx-size", f->ctx_size,
                  "context size in tokens (0: the model's; capped by the model's)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("-b,--batch-size", f->batch_size, "tokens per step, all sequences together")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--ubatch-size", f->ubatch_size,
                  "largest prefill chunk of one sequence per step (also -ub)")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--kv-type", f->kv_type, "KV cache type")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0"}))
      ->capture_default_str();
  cmd->add_option("--kv-block-size", f->kv_block_size, "KV block: 8..128 tokens, a power of 2")
      ->check(number_check(
          [](double v) {
            const auto n = static_cast<int64_t>(v);
            return v == static_cast<double>(n) && n >= 8 && n <= 128 && (n & (n - 1)) == 0;
          },
          "a power of 2 in [8, 128]"))
      ->capture_default_str();
  CLI::Option* blocks =
      cmd->add_option("--kv-blocks", f->kv_blocks,
                      "KV pool size in blocks, the null block included (0: the context); at "
                      "least one full context")
          ->check(at_least(0));
  cmd->add_option("--kv-memory", f->kv_memory_mib, "KV pool size in MiB; at least one full context")
      ->check(at_least(0))
      ->excludes(blocks);
  cmd->add_flag("--no-repack", f->no_repack,
                "keep weights in their GGUF layout (no AMX / repacked buffers)");
  cmd->add_flag("--no-mmap", f->no_mmap, "read the model into memory instead of mapping it");
  cmd->add_flag("--mlock", f->mlock, "lock the model's memory (no swapping out)");
  cmd->add_option("--flash-attn", f->flash_attn,
                  "flash attention (also -fa): on|off|auto; folio's attention is always flash")
      ->check(CLI::IsMember({"on", "off", "auto"}))
      ->capture_default_str();
  cmd->add_flag("--jinja")->description(
      "chat templates are always rendered by folio's Jinja engine (no-op)");
  add_device_flags(cmd, &f->device, &f->n_gpu_layers);
}

void add_device_flags(CLI::App* cmd, std::string* device, int* n_gpu_layers) {
  cmd->add_option("--n-gpu-layers,--gpu-layers", *n_gpu_layers,
                  "layers on the device (also -ngl): the last N, more than the model has moves "
                  "the output head too; -1: all")
      ->check(at_least(-1))
      ->capture_default_str();
  cmd->add_option("--device", *device,
                  "compute device (also -dev): auto (a GPU when -ngl > 0), cpu, none, vulkan, "
                  "vulkan:N (folio info lists them)")
      ->capture_default_str();
}

void warn_about_model_flags(const ModelFlags& f) {
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (cpus > 0 && f.threads > cpus) {
    FOLIO_LOG_WARN("-t {}: more threads than this machine's {} CPUs; expect it to be slower",
                   f.threads, cpus);
  }
  if (f.threads_batch > 0 && f.threads_batch != (f.threads > 0 ? f.threads : default_thread_count())) {
    FOLIO_LOG_WARN("-tb {}: folio processes prompts with the -t threads ({})", f.threads_batch,
                   f.threads > 0 ? f.threads : default_thread_count());
  }
  if (f.flash_attn == "off") {
    FOLIO_LOG_WARN("-fa off: folio's attention is always flash attention (the paged KV cache "
                   "is read inside its kernel); running with it");
  }
}

int64_t prefill_chunk(const ModelFlags& f) { return std::min(f.batch_size, f.ubatch_size); }

void add_n_predict_flag(CLI::App* cmd, int64_t* n_predict, const std::string& what) {
  cmd->add_option("-n,--n-predict", *n_predict, what + " (-1: until the end or a full context)")
      ->check(at_least(-1))
      ->capture_default_str();
}

std::FILE* info_log() { return log_level() <= LogLevel::kInfo ? stderr : nullptr; }

std::vector<const BufferType*> weight_buffer_types(bool no_repack) {
  return cpu_weight_buffer_types(active_isa(), !no_repack);
}

void log_weight_buffer_types(bool no_repack, std::FILE* log) {
  if (log != nullptr) {
    std::fprintf(log, "folio: %s\n", cpu_weight_buffer_note(active_isa(), !no_repack).c_str());
  }
}

void add_spec_flags(CLI::App* cmd, SpecFlags* f) {
  SpeculativeOptions& o = f->options;
  cmd->add_option("--spec-type,--spec", f->type,
                  "speculative decoding: none, ngram (prompt lookup: drafts copied from what "
                  "followed the last n-gram earlier in the sequence), draft (a draft model, "
                  "-md) or mtp (the model's own MTP head, where the file carries one)")
      ->check(CLI::IsMember({"none", "ngram", "draft", "mtp"}))
      ->capture_default_str();
  cmd->add_option("--model-draft", f->draft_model,
                  "draft model GGUF for speculative decoding (also -md; same vocabulary as -m; "
                  "implies --spec-type draft)");
  cmd->add_option("--device-draft,--spec-draft-device", f->draft_device,
                  "draft model's compute device (also -devd): auto (a GPU when -ngld > 0), cpu, "
                  "none, vulkan, vulkan:N")
      ->capture_default_str();
  cmd->add_option("--n-gpu-layers-draft,--spec-draft-ngl,--gpu-layers-draft",
                  f->draft_n_gpu_layers,
                  "draft model's layers on its device (also -ngld): the last N; -1: all")
      ->check(at_least(-1))
      ->capture_default_str();
  cmd->add_option("--spec-draft-p-min,--draft-p-min", o.draft_p_min,
                  "draft model, MTP head: a proposal stops before a token the drafter gives a "
                  "probability below this")
      ->check(number_check([](double v) { return v >= 0 && v <= 1; }, "in [0, 1]"))
      ->capture_default_str();
  cmd->add_option("--spec-ngram-n-min", o.ngram_min, "shortest n-gram looked up")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--spec-ngram-n-max", o.ngram_max, "longest n-gram looked up (tried first)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--spec-draft-n-max,--draft-max,--draft,--draft-n", o.draft_max,
                  "draft tokens verified per step at most")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--spec-draft-n-min,--draft-min,--draft-n-min", o.draft_min,
                  "fewer draft tokens proposed: a plain decode step")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  cmd->add_option("--spec-max-batch", o.max_batch,
                  "no drafts in a step where more sequences than this decode")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--spec-min-accept", o.min_accept,
                  "a sequence stops speculating when the share of its drafts accepted falls "
                  "below this (0: never)")
      ->check(number_check([](double v) { return v >= 0 && v <= 1; }, "in [0, 1]"))
      ->capture_default_str();
}

Result<SpeculativeOptions> spec_options(const SpecFlags& f) {
  SpeculativeOptions o = f.options;
  FOLIO_ASSIGN_OR_RETURN(o.type, parse_spec_type(f.type));
  if (!f.draft_model.empty() && o.type == SpecType::kNone) o.type = SpecType::kDraft;
  if (o.type == SpecType::kDraft && f.draft_model.empty())
    return invalid_argument("--spec-type draft needs a draft model (-md FILE)");
  if (o.type != SpecType::kDraft && !f.draft_model.empty())
    return invalid_argument("-md (a draft model) goes with --spec-type draft, not {}", f.type);
  FOLIO_RETURN_IF_ERROR(o.validate());
  return o;
}

void add_sampling_flags(CLI::App* cmd, SamplingFlags* f) {
  SamplingParams& p = f->params;
  cmd->add_option("--temp", p.temperature, "temperature (0 = greedy)")
      ->check(finite_at_least(0))
      ->capture_default_str();
  cmd->add_option("--top-k", p.top_k, "top-k sampling (0 = off)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--top-p", p.top_p, "top-p sampling (1 = off)")
      ->check(number_check([](double v) { return v > 0 && v <= 1; }, "in (0, 1]"))
      ->capture_default_str();
  cmd->add_option("--min-p", p.min_p, "min-p sampling (0 = off)")
      ->check(number_check([](double v) { return v >= 0 && v <= 1; }, "in [0, 1]"))
      ->capture_default_str();
  cmd->add_option("--repeat-penalty", p.repetition_penalty, "repetition penalty (1 = off)")
      ->check(number_check([](double v) { return std::isfinite(v) && v > 0; },
                           "a finite number > 0"))
      ->capture_default_str();
  cmd->add_option("--repeat-last-n", p.penalty_last_n, "penalty window (-1 = all, 0 = off)")
      ->check(at_least(-1))
      ->capture_default_str();
  const auto finite = number_check([](double v) { return std::isfinite(v); }, "a finite number");
  cmd->add_option("--presence-penalty", p.presence_penalty, "presence penalty")
      ->check(finite)
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", p.frequency_penalty, "frequency penalty")
      ->check(finite)
      ->capture_default_str();
  cmd->add_option("-s,--seed", f->seed, "RNG seed (-1 = random)")
      ->check(at_least(-1))
      ->capture_default_str();
  cmd->add_option("-r,--reverse-prompt,--stop", p.stop, "stop generating at this text (repeatable)")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            if (s.empty()) return "must not be empty";
            if (s.size() > kMaxStopStringBytes) {
              return fmt::format("longer than {} bytes", kMaxStopStringBytes);
            }
            return std::string();
          },
          ""));
}

Result<SamplingParams> sampling_params(const SamplingFlags& f, int32_t n_vocab) {
  SamplingParams p = f.params;
  if (f.seed >= 0) p.seed = static_cast<uint64_t>(f.seed);
  FOLIO_RETURN_IF_ERROR(p.validate(n_vocab));
  return p;
}

int fail(const Status& status) {
  std::fprintf(stderr, "folio: %s\n", status.message().c_str());
  return 1;
}

Result<std::unique_ptr<model::Model>> load_on_device(const std::string& path,
                                                    const model::LoadOptions& lo,
                                                    Backend* device) {
  Result<std::unique_ptr<model::Model>> loaded = model::Model::load(path, lo);
  if (!loaded.ok() && device != nullptr && loaded.status().code() == StatusCode::kResourceExhausted) {
    return resource_exhausted("{}; offload fewer layers (-ngl N) or use --device cpu",
                              loaded.status().message());
  }
  FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<model::Model> m, std::move(loaded));
  if (device == nullptr) return m;
  if (std::FILE* log = info_log()) {
    const int n = m->config().n_layer, off = lo.offload_layers;
    std::fprintf(log, "folio: device %s: %d of %d layers offloaded%s\n", device->name().c_str(),
                 off < 0 ? n : std::min(off, n), n,
                 off < 0 || off > n ? ", and the output head" : "");
  }
  return m;
}

namespace {

// Every command lets one sequence grow to the whole context (-c), so the
// KV pool must hold n_ctx positions of one sequence, and a hybrid model's
// recurrent-state pool a slot for it (KvCache::token_capacity). A smaller
// pool would stop a sequence short ("length") or fail a request the server
// had accepted: it is refused before anything runs, naming sizes that do.
Status check_pool_holds_context(const cache::KvCache& cache, int64_t n_ctx) {
  const int64_t capacity = cache.token_capacity();
  if (capacity >= n_ctx) return Status();
  const cache::KvCacheManager* blocks = cache.block_manager();
  if (capacity <= 0 || blocks == nullptr) {
    return invalid_argument("the KV cache ({}) cannot hold one sequence of the context of {} "
                            "tokens; use a smaller -c or a larger --kv-blocks / --kv-memory",
                            cache.summary(), n_ctx);
  }
  const int32_t bs = blocks->block_size();
  const int64_t want_blocks = int64_t{cache::blocks_for(n_ctx, bs)} + 1;  // + the null block
  std::string want_memory;
  if (const size_t block_bytes = cache.pool_block_bytes(); block_bytes > 0) {
    // The sliding-window layers' pages are paid for first (whole MiB).
    const int64_t windowed_mib =
        static_cast<int64_t>((cache.windowed_bytes() + (size_t{1} << 20) - 1) >> 20);
    const int64_t bytes = want_blocks * static_cast<int64_t>(block_bytes);
    want_memory = fmt::format(" or --kv-memory {}",
                              windowed_mib + ((bytes + (int64_t{1} << 20) - 1) >> 20));
  }
  return invalid_argument(
      "the KV pool holds {} tokens ({} usable blocks of {}), less than one full context of {} "
      "tokens: use a smaller -c (at most {}) or a larger pool (--kv-blocks {}{})",
      capacity, blocks->pool().n_usable(), bs, n_ctx, capacity, want_blocks, want_memory);
}

// n_seq: sequences created up front. n_parallel > 0: without --kv-blocks /
// --kv-memory, a pool of n_parallel contexts (instead of n_seq's).
Result<LoadedModel> load_model(const ModelFlags& f, int n_seq, int n_parallel, int draft_slots,
                               bool load_mtp) {
  Result<DType> kv = cache::parse_kv_type(f.kv_type);
  if (!kv.ok()) return kv.status().with_context("--kv-type");
  LoadedModel lm;
  FOLIO_ASSIGN_OR_RETURN(DeviceChoice dc, choose_device(f.device, f.n_gpu_layers));
  if (!dc.note.empty()) FOLIO_LOG_WARN("{}", dc.note);
  lm.device = std::move(dc.device);
  model::LoadOptions lo;
  lo.log = info_log();
  lo.buffer_types = weight_buffer_types(f.no_repack);
  lo.file.mmap = !f.no_mmap;
  lo.file.mlock = f.mlock;
  lo.load_mtp = load_mtp;
  offload_weights(lm.device.get(), dc.offload_layers, &lo);
  FOLIO_ASSIGN_OR_RETURN(lm.model, load_on_device(f.model, lo, lm.device.get()));
  log_weight_buffer_types(f.no_repack, info_log());
  FOLIO_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok, tokenizer::Tokenizer::from_gguf(lm.model->file()));
  lm.tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tok));
  lm.ctx = model::ForwardContext::with_device(lm.device.get(),
                                              f.threads > 0 ? f.threads : default_thread_count());
  cache::KvCacheOptions co;
  co.alloc = kv_allocator(lm.device.get(), dc.offload_layers);
  const int64_t train_ctx = lm.model->config().n_ctx_train;
  const int64_t want_ctx = f.ctx_size > 0 ? f.ctx_size : (train_ctx > 0 ? train_ctx : 4096);
  co.n_ctx = train_ctx > 0 ? std::min(want_ctx, train_ctx) : want_ctx;
  co.n_seq = n_seq;
  co.type = *kv;
  co.storage = cache::KvStorage::kPaged;
  co.block_size = f.kv_block_size;
  co.max_step_tokens = f.batch_size;  // sizes the sliding-window layers' pages
  co.n_blocks = f.kv_blocks;
  co.memory_mib = f.kv_memory_mib;
  if (n_parallel > 0 && f.kv_blocks == 0 && f.kv_memory_mib == 0 && f.kv_block_size > 0) {
    const int64_t per_seq = (co.n_ctx + f.kv_block_size - 1) / f.kv_block_size;
    co.n_blocks = static_cast<int32_t>(std::min<int64_t>(n_parallel * per_seq + 1, INT32_MAX));
  }
  co.max_seqs = std::max({n_seq, n_parallel, 1});  // hybrid models: recurrent state per sequence
  co.draft_slots = draft_slots;
  Result<std::unique_ptr<cache::KvCache>> cache = lm.model->make_cache(co);
  if (!cache.ok() && co.alloc && cache.status().code() == StatusCode::kResourceExhausted) {
    return resource_exhausted("KV cache on {}: {}; use a smaller -c / --kv-memory or fewer -ngl layers",
                              lm.device->name(), cache.status().message());
  }
  if (!cache.ok()) return cache.status().with_context("KV cache");
  FOLIO_RETURN_IF_ERROR(check_pool_holds_context(**cache, co.n_ctx));
  if (std::FILE* log = info_log()) {
    std::fprintf(log, "folio: context %lld tokens, KV cache %s, %s, %d threads\n",
                 static_cast<long long>(co.n_ctx), dtype_name(co.type),
                 (*cache)->summary().c_str(), lm.ctx->n_threads());
  }
  lm.cache = std::move(cache).value();
  return lm;
}

}  // namespace

Result<LoadedModel> load_for_generation(const ModelFlags& f, const SpeculativeOptions& spec) {
  return load_model(f, 1, 0, spec.enabled() ? spec.draft_max : 0, spec.type == SpecType::kMtp);
}

namespace {

Status load_mtp_head(const ModelFlags& tf, int n_parallel, LoadedModel* lm,
                     SpeculativeOptions* spec) {
  const auto fail_with = [&](const Status& st) {
    return st.with_context(fmt::format("--spec-type mtp: '{}'", tf.model));
  };
  auto d = std::make_unique<LoadedDraft>();
  Result<std::unique_ptr<model::MtpHead>> head = model::MtpHead::create(*lm->model);
  if (!head.ok()) return fail_with(head.status());
  d->mtp = std::move(head).value();
  d->hidden = std::make_unique<model::HiddenStates>(lm->model->config().n_embd);
  d->ctx = model::ForwardContext::with_device(lm->device.get(), lm->ctx->n_threads());
  Result<DType> kv = cache::parse_kv_type(tf.kv_type);
  if (!kv.ok()) return kv.status().with_context("--kv-type");
  const int n_seqs = std::max(n_parallel, 1);
  cache::KvCacheOptions co;
  co.n_seq = 0;  // the proposer adds its sequences
  co.n_ctx = lm->cache->n_ctx();
  co.type = *kv;
  co.storage = cache::KvStorage::kPaged;
  co.block_size = tf.kv_block_size;
  co.max_step_tokens = tf.batch_size;
  co.prefix_caching = false;  // nothing looks prefixes up in the head's cache
  const int64_t per_seq = cache::blocks_for(co.n_ctx + spec->draft_max, tf.kv_block_size);
  co.n_blocks = static_cast<int32_t>(std::min<int64_t>(n_seqs * per_seq + 1, INT32_MAX));
  co.max_seqs = n_seqs;
  Result<std::unique_ptr<cache::KvCache>> cache = d->mtp->make_cache(co);
  if (!cache.ok()) return fail_with(cache.status().with_context("MTP KV cache"));
  d->cache = std::move(cache).value();
  if (std::FILE* log = info_log()) {
    std::fprintf(log, "folio: MTP head (block %d of %d): KV cache %s\n",
                 lm->model->config().n_layer, lm->model->config().n_layer +
                 lm->model->config().nextn.n_layer - 1, d->cache->summary().c_str());
  }
  lm->ctx->set_hidden_sink(d->hidden.get());
  spec->mtp.head = d->mtp.get();
  spec->mtp.cache = d->cache.get();
  spec->mtp.ctx = d->ctx.get();
  spec->mtp.hidden = d->hidden.get();
  spec->mtp.max_batch_tokens = std::max<int64_t>(1, std::min(tf.batch_size, tf.ubatch_size));
  lm->draft = std::move(d);
  return Status();
}

}  // namespace

Status load_draft(const ModelFlags& tf, const SpecFlags& flags, int n_parallel, LoadedModel* lm,
                  SpeculativeOptions* spec) {
  if (spec->type == SpecType::kMtp) return load_mtp_head(tf, n_parallel, lm, spec);
  if (spec->type != SpecType::kDraft) return Status();
  const auto fail_with = [&](const Status& st) {
    return st.with_context(fmt::format("draft model '{}'", flags.draft_model));
  };
  auto d = std::make_unique<LoadedDraft>();
  Result<DeviceChoice> dc = choose_device(flags.draft_device, flags.draft_n_gpu_layers);
  if (!dc.ok()) {
    return fail_with(
        dc.status().with_context(fmt::format("--device-draft {}", flags.draft_device)));
  }
  if (!dc->note.empty()) FOLIO_LOG_WARN("draft model: {}", dc->note);
  d->device = std::move(dc->device);
  model::LoadOptions lo;
  lo.log = info_log();
  lo.buffer_types = weight_buffer_types(tf.no_repack);
  lo.file.mmap = !tf.no_mmap;
  lo.file.mlock = tf.mlock;
  offload_weights(d->device.get(), dc->offload_layers, &lo);
  Result<std::unique_ptr<model::Model>> m = load_on_device(flags.draft_model, lo, d->device.get());
  if (!m.ok()) return fail_with(m.status());
  d->model = std::move(m).value();
  Result<tokenizer::Tokenizer> tok = tokenizer::Tokenizer::from_gguf(d->model->file());
  if (!tok.ok()) return fail_with(tok.status());
  const Status vocab = check_draft_vocabulary(lm->tokenizer->vocab(), lm->model->config().n_vocab,
                                              tok->vocab(), d->model->config().n_vocab);
  if (!vocab.ok()) return fail_with(vocab);
  d->ctx = model::ForwardContext::with_device(d->device.get(), lm->ctx->n_threads());
  Result<DType> kv = cache::parse_kv_type(tf.kv_type);
  if (!kv.ok()) return kv.status().with_context("--kv-type");
  // Every running sequence keeps a draft sequence; those speculating in a
  // step also fork it for their proposal.
  const int n_seqs = std::max(n_parallel, 1);
  const int n_forks = std::min(spec->max_batch, n_seqs);
  cache::KvCacheOptions co;
  co.n_seq = 0;  // the proposer adds its sequences (an idle one would take a fork's place)
  co.n_ctx = lm->cache->n_ctx();
  const int64_t train_ctx = d->model->config().n_ctx_train;
  if (train_ctx > 0) co.n_ctx = std::min(co.n_ctx, train_ctx);
  co.type = *kv;
  co.storage = cache::KvStorage::kPaged;
  co.block_size = tf.kv_block_size;
  co.max_step_tokens = tf.batch_size;
  const int64_t per_seq = cache::blocks_for(co.n_ctx, tf.kv_block_size);
  const int64_t per_fork = cache::blocks_for(spec->draft_max, tf.kv_block_size) + 1;
  co.n_blocks = static_cast<int32_t>(
      std::min<int64_t>(n_seqs * per_seq + n_forks * per_fork + 1, INT32_MAX));
  co.max_seqs = n_seqs + n_forks;  // hybrid drafts: a state slot each
  co.alloc = kv_allocator(d->device.get(), dc->offload_layers);
  Result<std::unique_ptr<cache::KvCache>> cache = d->model->make_cache(co);
  if (!cache.ok()) return fail_with(cache.status().with_context("KV cache"));
  d->cache = std::move(cache).value();
  if (std::FILE* log = info_log()) {
    std::fprintf(log, "folio: draft model %s on %s: context %lld tokens, KV cache %s\n",
                 flags.draft_model.c_str(),
                 d->ctx->backends().empty() ? "cpu" : d->ctx->backends()[0]->name().c_str(),
                 static_cast<long long>(co.n_ctx), d->cache->summary().c_str());
  }
  spec->draft.model = d->model.get();
  spec->draft.cache = d->cache.get();
  spec->draft.ctx = d->ctx.get();
  spec->draft.max_batch_tokens = std::max<int64_t>(1, std::min(tf.batch_size, tf.ubatch_size));
  lm->draft = std::move(d);
  return Status();
}

chat::ChatTemplate pick_chat_template(const LoadedModel& lm) {
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
    auto t = chat::ChatTemplate::parse(kGemmaTemplate, lm.tokenizer->piece(vocab.bos(), true),
                                            lm.tokenizer->piece(vocab.eos(), true));
    if (t.ok()) return std::move(t).value();
  }
  return chat::ChatTemplate::from_gguf(lm.model->file(), vocab);
}

Result<LoadedModel> load_for_batch(const ModelFlags& f, int n_parallel,
                                   const SpeculativeOptions& spec) {
  if (n_parallel < 1) return invalid_argument("--parallel must be >= 1, got {}", n_parallel);
  const int draft_slots = spec.enabled() ? std::min(spec.max_batch, n_parallel) * spec.draft_max : 0;
  return load_model(f, 0, n_parallel, draft_slots, spec.type == SpecType::kMtp);
}

}  // namespace folio::tools
