/* llama_archs_logits: llama.cpp's reference logits for one GGUF file, given
 * token ids (the files test-llama-archs writes have no tokenizer).
 *
 *   llama_archs_logits MODEL N_GEN OUT_PREFIX ID...
 *   llama_archs_logits --strip IN OUT [--gain] [--layers N] [--set-f32 KEY V]
 *                      [--set-i32s KEY V,V,...] [--set-u32 KEY V] SUFFIX...
 *
 * --strip copies IN to OUT with ggml's own GGUF writer, every key/value
 * verbatim, without the `blk.*` tensors whose names end in one of the
 * SUFFIXes; --strip-f16 also stores the matrices as F16 (to_f16).
 * --gain first lifts the saver's weights (all normal, std 0.01) to working
 * magnitudes, so that soft-capping, gates and windows move the logits: norm
 * weights become 1 + w, every other F32 `.weight` tensor (matrices, the
 * shared-expert gate vector) 8 w, std 0.08 ~ 1.3 / sqrt(n_embd 256);
 * rope_freqs (frequency divisors: at 0.01 they spin the rotations ~100x
 * faster than any model) 1 + w; biases and the SSM's A / D / conv are kept.
 * --layers N repeats the file's blocks cyclically up to N blocks (blk.L is a
 * copy of blk.(L mod n)) and sets `ARCH.block_count` to N, for families whose
 * feature shows only in deeper models (smollm3: no rope on every 4th block);
 * only for files whose per-layer keys are scalars. --set-f32 KEY V writes
 * the float key KEY = V (gemma2: a soft-capping constant small enough that
 * capping changes the scores); --set-i32s KEY V,V,... the int32 array key
 * KEY (qwen3vl: rope sections that leave rotary pairs to the e position);
 * --set-u32 KEY V the uint32 key KEY (minimax-m2: partial rope dims).
 *
 * Loads MODEL on the CPU (F32 K/V cache, flash attention off, 2 threads,
 * n_ctx 128, one ubatch for the whole prompt), decodes the prompt ids as one
 * batch from position 0 with the logits of every position, then greedily
 * continues N_GEN tokens one at a time: each step feeds the argmax of the
 * previous logits. Writes
 *   OUT_PREFIX.prefill.f32  [n_prompt, n_vocab] little-endian float32
 *   OUT_PREFIX.decode.f32   [N_GEN, n_vocab] (the logits after each fed token)
 *   OUT_PREFIX.gen.txt      the N_GEN greedy ids, comma-separated
 * and prints n_vocab. Built and run by scripts/gen_llama_archs.py against a
 * llama.cpp build (its include/ and ggml/include/, libllama.so).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml.h"
#include "gguf.h"
#include "llama.h"

static int ends_with(const char* s, const char* suffix) {
  const size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The matrices a matmul reads (F16 halves the file): 2-D+ F32 `.weight`
 * tensors other than norms, convolutions and the SSM's elementwise A / D. */
static int to_f16(const struct ggml_tensor* t) {
  const char* name = t->name;
  return t->type == GGML_TYPE_F32 && ggml_n_dims(t) >= 2 && ends_with(name, ".weight") &&
         strstr(name, "norm") == NULL && strstr(name, "conv") == NULL &&
         strstr(name, "ssm_a") == NULL && strstr(name, "ssm_d") == NULL;
}

/* --gain: the tensors scaled (8 w) and the norms lifted (1 + w). */
static int gain_kind(const struct ggml_tensor* t) {
  const char* name = t->name;
  if (t->type != GGML_TYPE_F32 || !ends_with(name, ".weight")) return 0;
  if (strstr(name, "rope_freqs") != NULL) return 2; /* divisors of the frequencies: 1 + w */
  if (strstr(name, "conv") != NULL ||
      strstr(name, "ssm_a") != NULL || strstr(name, "ssm_d") != NULL) {
    return 0;
  }
  return strstr(name, "norm") != NULL ? 2 : 1;
}

static void apply_gain(struct ggml_tensor* t) {
  const int kind = gain_kind(t);
  float* v = (float*)t->data;
  for (int64_t i = 0; i < ggml_nelements(t); ++i) {
    if (kind == 1) v[i] *= 8.0f;
    if (kind == 2) v[i] += 1.0f;
  }
}

/* "blk.L.rest" -> L and the offset of "rest", or -1. */
static int block_of(const char* name, int* rest) {
  if (strncmp(name, "blk.", 4) != 0) return -1;
  char* end = NULL;
  const long l = strtol(name + 4, &end, 10);
  if (end == name + 4 || *end != '.') return -1;
  *rest = (int)(end + 1 - name);
  return (int)l;
}

/* "a,b,c" -> up to 16 ints; returns the count. */
static int parse_i32s(const char* s, int32_t* v) {
  int n = 0;
  while (*s != '\0' && n < 16) {
    char* end = NULL;
    v[n++] = (int32_t)strtol(s, &end, 10);
    if (end == s) return -1;
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

static int strip(const char* in, const char* out, int f16, int gain, int n_layers, int n_set,
                 char** sets, int n_arr, char** arrs, int n_u32, char** u32s, int n_suffix,
                 char** suffixes) {
  struct ggml_context* data = NULL;
  struct gguf_init_params params = {false, &data};
  struct gguf_context* src = gguf_init_from_file(in, params);
  if (src == NULL) {
    fprintf(stderr, "cannot read %s\n", in);
    return 1;
  }
  struct gguf_context* dst = gguf_init_empty();
  gguf_set_kv(dst, src);
  for (int k = 0; k < n_set; ++k) gguf_set_val_f32(dst, sets[2 * k], (float)atof(sets[2 * k + 1]));
  for (int k = 0; k < n_u32; ++k) {
    gguf_set_val_u32(dst, u32s[2 * k], (uint32_t)strtoul(u32s[2 * k + 1], NULL, 10));
  }
  for (int k = 0; k < n_arr; ++k) {
    int32_t v[16];
    const int n = parse_i32s(arrs[2 * k + 1], v);
    if (n <= 0) {
      fprintf(stderr, "bad int list %s for %s\n", arrs[2 * k + 1], arrs[2 * k]);
      return 1;
    }
    gguf_set_arr_data(dst, arrs[2 * k], GGUF_TYPE_INT32, v, (size_t)n);
  }
  int n_src_layers = 0;
  char block_count_key[256] = "";
  if (n_layers > 0) {
    const int64_t arch = gguf_find_key(src, "general.architecture");
    if (arch < 0) {
      fprintf(stderr, "%s: no general.architecture\n", in);
      return 1;
    }
    snprintf(block_count_key, sizeof block_count_key, "%s.block_count",
             gguf_get_val_str(src, arch));
    const int64_t bc = gguf_find_key(src, block_count_key);
    if (bc < 0 || gguf_get_val_u32(src, bc) == 0) {
      fprintf(stderr, "%s: no %s\n", in, block_count_key);
      return 1;
    }
    n_src_layers = (int)gguf_get_val_u32(src, bc);
    gguf_set_val_u32(dst, block_count_key, (uint32_t)n_layers);
  }
  /* Room for the F16 copies and the added blocks' copies. */
  const int copies = n_layers > n_src_layers ? n_layers / (n_src_layers ? n_src_layers : 1) + 1 : 1;
  struct ggml_init_params hp = {ggml_get_mem_size(data) * (size_t)(copies + 1), NULL, false};
  struct ggml_context* half = ggml_init(hp);
  for (int64_t i = 0; i < gguf_get_n_tensors(src); ++i) {
    const char* name = gguf_get_tensor_name(src, i);
    int drop = 0;
    for (int k = 0; k < n_suffix; ++k) {
      drop |= strncmp(name, "blk.", 4) == 0 && ends_with(name, suffixes[k]);
    }
    if (drop) continue;
    struct ggml_tensor* t = ggml_get_tensor(data, name);
    if (gain) apply_gain(t);
    if (f16 && to_f16(t)) {
      struct ggml_tensor* h = ggml_new_tensor(half, GGML_TYPE_F16, GGML_MAX_DIMS, t->ne);
      ggml_set_name(h, name);
      ggml_fp32_to_fp16_row((const float*)t->data, (ggml_fp16_t*)h->data, ggml_nelements(t));
      t = h;
    }
    gguf_add_tensor(dst, t);
    int rest = 0;
    const int l = block_of(name, &rest);
    if (l < 0 || n_layers <= n_src_layers) continue;
    for (int copy = l + n_src_layers; copy < n_layers; copy += n_src_layers) {
      struct ggml_tensor* c = ggml_dup_tensor(half, t);
      memcpy(c->data, t->data, ggml_nbytes(t));
      char copy_name[GGML_MAX_NAME];
      snprintf(copy_name, sizeof copy_name, "blk.%d.%s", copy, name + rest);
      ggml_set_name(c, copy_name);
      gguf_add_tensor(dst, c);
    }
  }
  if (!gguf_write_to_file(dst, out, false)) {
    fprintf(stderr, "cannot write %s\n", out);
    return 1;
  }
  gguf_free(dst);
  gguf_free(src);
  ggml_free(half);
  ggml_free(data);
  return 0;
}

static void quiet_log(enum ggml_log_level level, const char* text, void* user) {
  (void)user;
  if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int write_rows(const char* prefix, const char* suffix, const float* data, size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s%s", prefix, suffix);
  FILE* f = fopen(path, "wb");
  if (f == NULL || fwrite(data, sizeof(float), n, f) != n) {
    fprintf(stderr, "cannot write %s\n", path);
    if (f != NULL) fclose(f);
    return 1;
  }
  return fclose(f) != 0;
}

static int argmax(const float* v, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i) {
    if (v[i] > v[best]) best = i;
  }
  return best;
}

int main(int argc, char** argv) {
  if (argc >= 4 && (strcmp(argv[1], "--strip") == 0 || strcmp(argv[1], "--strip-f16") == 0)) {
    const int f16 = strcmp(argv[1], "--strip-f16") == 0;
    int gain = 0, n_layers = 0, n_set = 0, n_arr = 0, n_u32 = 0, a = 4;
    char* sets[16];
    char* arrs[16];
    char* u32s[16];
    for (; a < argc && strncmp(argv[a], "--", 2) == 0; ++a) {
      if (strcmp(argv[a], "--gain") == 0) {
        gain = 1;
      } else if (strcmp(argv[a], "--set-f32") == 0 && a + 2 < argc && n_set < 8) {
        sets[2 * n_set] = argv[a + 1];
        sets[2 * n_set + 1] = argv[a + 2];
        ++n_set;
        a += 2;
      } else if (strcmp(argv[a], "--set-i32s") == 0 && a + 2 < argc && n_arr < 8) {
        arrs[2 * n_arr] = argv[a + 1];
        arrs[2 * n_arr + 1] = argv[a + 2];
        ++n_arr;
        a += 2;
      } else if (strcmp(argv[a], "--set-u32") == 0 && a + 2 < argc && n_u32 < 8) {
        u32s[2 * n_u32] = argv[a + 1];
        u32s[2 * n_u32 + 1] = argv[a + 2];
        ++n_u32;
        a += 2;
      } else if (strcmp(argv[a], "--layers") == 0 && a + 1 < argc && atoi(argv[a + 1]) > 0) {
        n_layers = atoi(argv[++a]);
      } else {
        fprintf(stderr, "unknown or incomplete option %s\n", argv[a]);
        return 1;
      }
    }
    return strip(argv[2], argv[3], f16, gain, n_layers, n_set, sets, n_arr, arrs, n_u32, u32s,
                 argc - a, argv + a);
  }
  if (argc < 5) {
    fprintf(stderr, "usage: %s MODEL N_GEN OUT_PREFIX ID...\n", argv[0]);
    return 2;
  }
  const char* model_path = argv[1];
  const int n_gen = atoi(argv[2]);
  const char* prefix = argv[3];
  const int n_prompt = argc - 4;
  llama_token* prompt = malloc(sizeof(llama_token) * (size_t)n_prompt);
  for (int i = 0; i < n_prompt; ++i) prompt[i] = atoi(argv[4 + i]);

  llama_log_set(quiet_log, NULL);
  ggml_backend_load_all();
  llama_backend_init();

  struct llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  struct llama_model* model = llama_model_load_from_file(model_path, mp);
  if (model == NULL) {
    fprintf(stderr, "cannot load %s\n", model_path);
    return 1;
  }
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 128;
  cp.n_batch = 128;
  cp.n_ubatch = 128;
  cp.n_seq_max = 1;
  cp.n_threads = 2;
  cp.n_threads_batch = 2;
  cp.type_k = GGML_TYPE_F32;
  cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.no_perf = true;
  struct llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == NULL) {
    fprintf(stderr, "cannot create a context for %s\n", model_path);
    return 1;
  }
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  if (n_prompt + n_gen > (int)llama_n_ctx(ctx)) {
    fprintf(stderr, "prompt + continuation exceed n_ctx %u\n", llama_n_ctx(ctx));
    return 1;
  }

  struct llama_batch batch = llama_batch_init(n_prompt, 0, 1);
  for (int i = 0; i < n_prompt; ++i) {
    batch.token[i] = prompt[i];
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = n_prompt;
  if (llama_decode(ctx, batch) != 0) {
    fprintf(stderr, "prefill failed\n");
    return 1;
  }
  float* prefill = malloc(sizeof(float) * (size_t)n_prompt * (size_t)n_vocab);
  for (int i = 0; i < n_prompt; ++i) {
    memcpy(prefill + (size_t)i * n_vocab, llama_get_logits_ith(ctx, i), sizeof(float) * n_vocab);
  }
  if (write_rows(prefix, ".prefill.f32", prefill, (size_t)n_prompt * n_vocab)) return 1;

  float* decode = malloc(sizeof(float) * (size_t)(n_gen > 0 ? n_gen : 1) * (size_t)n_vocab);
  char path[4096];
  snprintf(path, sizeof path, "%s.gen.txt", prefix);
  FILE* gen = fopen(path, "w");
  if (gen == NULL) {
    fprintf(stderr, "cannot write %s\n", path);
    return 1;
  }
  int next = argmax(prefill + (size_t)(n_prompt - 1) * n_vocab, n_vocab);
  for (int i = 0; i < n_gen; ++i) {
    fprintf(gen, i == 0 ? "%d" : ",%d", next);
    batch.token[0] = next;
    batch.pos[0] = n_prompt + i;
    batch.n_seq_id[0] = 1;
    batch.seq_id[0][0] = 0;
    batch.logits[0] = 1;
    batch.n_tokens = 1;
    if (llama_decode(ctx, batch) != 0) {
      fprintf(stderr, "decode step %d failed\n", i);
      return 1;
    }
    memcpy(decode + (size_t)i * n_vocab, llama_get_logits_ith(ctx, 0), sizeof(float) * n_vocab);
    next = argmax(decode + (size_t)i * n_vocab, n_vocab);
  }
  fprintf(gen, "\n");
  fclose(gen);
  if (write_rows(prefix, ".decode.f32", decode, (size_t)n_gen * n_vocab)) return 1;
  printf("%d\n", n_vocab);

  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  free(prompt);
  free(prefill);
  free(decode);
  return 0;
}
