// hunyuan-dense: Tencent Hunyuan dense models (Hunyuan-0.5B/1.8B/4B/7B-
// Instruct; llama.cpp's hunyuan-dense, which shares hunyuan-vl's hparams,
// tensors and graph). The pre-norm decoder with:
//   - neox rope over the whole head, then RMS norms of q and k per head
//     (attn_q_norm / attn_k_norm) AFTER the rope (the reverse of qwen3);
//   - NTK-aware scaling by rope.scaling.alpha (optional): the rope base is
//     raised to base * alpha^(D / (D - 2)) at load;
//   - optional q/k/v biases (llama.cpp's create_tensor_qkv), no output
//     bias, a SiLU-gated FFN, q.k scale 1/sqrt(head_dim);
//   - expert_count <= 1 reads as a dense model (llama.cpp zeroes it), and
//     the experts are never run: the graph has a dense FFN only.
// rope.dimension_sections is read by llama.cpp only for hunyuan-vl's
// multi-section rope; this family's rope type is neox, which ggml's
// multi-section call leaves neox, so the key changes nothing here.
#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/hparams.h"

namespace folio::model {

namespace {

Status configure_hunyuan_dense(const gguf::GgufFile& file, ModelConfig& c) {
  c.rope.mode = RopeMode::kNeox;
  c.qkv_bias = BiasMode::kOptional;
  c.qk_norm = true;
  c.qk_norm_after_rope = true;
  c.ffn_glu = GluKind::kSwiGlu;
  c.moe = MoeConfig{};
  c.attn_scale = 0.0f;
  c.final_softcap = 0.0f;
  if (c.head_dim_k != c.head_dim_v || c.rope.n_dims != c.head_dim_k) {
    return invalid_argument(
        "model: {} needs equal key and value head dims and rope over the whole head (key {}, "
        "value {}, rope {})",
        c.arch, c.head_dim_k, c.head_dim_v, c.rope.n_dims);
  }
  return read_rope_scaling_alpha(file, c);
}

constexpr ArchFamily kHunyuan[] = {
    {"hunyuan-dense", configure_hunyuan_dense, pre_norm_decoder},
};

}  // namespace

std::span<const ArchFamily> hunyuan_archs() {
  return kHunyuan;
}

}  // namespace folio::model
