// The default model, Gemma 3 270M Q4_K_M, that scripts/setup.sh assembles
// into models/ (scripts/test.sh runs setup first). FOLIO_GEMMA_GGUF names
// another copy. Tests that need it fail when it is missing: CI must not skip
// what this machine can run.
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

}  // namespace folio::testing
