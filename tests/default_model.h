// The bundled real models that scripts/setup.sh puts in models/
// (scripts/test.sh runs setup first):
//   - Gemma 3 270M Q4_K_M, the default completion model (a base model);
//     FOLIO_GEMMA_GGUF names another copy;
//   - SmolLM2 135M Instruct Q4_1, the chat model (llama architecture,
//     ChatML template); FOLIO_SMOLLM2_GGUF names another copy.
// Tests that need one fail when it is missing: CI must not skip what this
// machine can run.
#pragma once

#include <cstdlib>
#include <string>

namespace folio::testing {

inline std::string default_model_path() {
  if (const char* env = std::getenv("FOLIO_GEMMA_GGUF"); env != nullptr && *env != '\0') return env;
  return std::string(FOLIO_SOURCE_DIR) + "/models/gemma-3-270m-q4_k_m.gguf";
}

inline constexpr const char* kDefaultModelHint =
    "the default model is missing; scripts/setup.sh fetches it (or set FOLIO_GEMMA_GGUF)";

inline std::string chat_model_path() {
  if (const char* env = std::getenv("FOLIO_SMOLLM2_GGUF"); env != nullptr && *env != '\0') {
    return env;
  }
  return std::string(FOLIO_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct-Q4_1.gguf";
}

inline constexpr const char* kChatModelHint =
    "the chat model is missing; scripts/setup.sh fetches it (or set FOLIO_SMOLLM2_GGUF)";

}  // namespace folio::testing
