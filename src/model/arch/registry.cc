// The architecture registry: every family's entries, looked up by name.
#include <array>
#include <string>

#include "model/arch/arch.h"

namespace folio::model {

namespace {

std::array<std::span<const ArchFamily>, 19> families() {
  return {
      llama_archs(),     qwen_archs(),    gemma3_archs(), qwen3next_archs(),
      gpt_oss_archs(),   bert_archs(),    phi3_archs(),
      mistral3_archs(),
      glm4moe_archs(),
      granite_hybrid_archs(),
      gemma4_archs(),
      lfm2_archs(),
      nemotron_h_archs(),
      exaone4_archs(),
      deepseek2_archs(),
      hunyuan_archs(),
      ernie4_5_archs(),
      minimax_m2_archs(),
      falcon_h1_archs(),
  };
}

}  // namespace

const ArchFamily* find_arch(std::string_view arch) {
  for (std::span<const ArchFamily> family : families()) {
    for (const ArchFamily& a : family) {
      if (arch == a.name) return &a;
    }
  }
  return nullptr;
}

std::string known_archs() {
  std::string s;
  for (std::span<const ArchFamily> family : families()) {
    for (const ArchFamily& a : family) {
      if (!s.empty()) s += ", ";
      s += a.name;
    }
  }
  return s;
}

}  // namespace folio::model
