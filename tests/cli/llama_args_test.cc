// llama.cpp's multi-letter single-dash flags become folio's names; values
// (a prompt that reads like a flag) are never rewritten; `run -cnv` becomes
// `chat` with the prompt as the system prompt.
#include "llama_args.h"

#include <gtest/gtest.h>

namespace folio::tools {
namespace llama_args_test {

using Args = std::vector<std::string>;

TEST(LlamaArgs, RewritesSingleDashNames) {
  EXPECT_EQ(normalize_llama_args({"chat", "-m", "m.gguf", "-sys", "be brief", "-ngl", "99", "-tb",
                                  "2", "-fa", "on"}),
            (Args{"chat", "-m", "m.gguf", "--system-prompt", "be brief", "--n-gpu-layers", "99",
                  "--threads-batch", "2", "--flash-attn", "on"}));
  EXPECT_EQ(normalize_llama_args({"serve", "-np", "8", "-ub=256"}),
            (Args{"serve", "--parallel", "8", "--ubatch-size=256"}));
  EXPECT_EQ(normalize_llama_args({"run", "-m", "t.gguf", "-md", "d.gguf"}),
            (Args{"run", "-m", "t.gguf", "--model-draft", "d.gguf"}));
}

TEST(LlamaArgs, LeavesValuesAndOtherFlagsAlone) {
  EXPECT_EQ(normalize_llama_args({"run", "-p", "-sys", "-n", "5", "-t", "2"}),
            (Args{"run", "-p", "-sys", "-n", "5", "-t", "2"}));
  EXPECT_EQ(normalize_llama_args({"run", "--stop", "-fa", "-s", "1"}),
            (Args{"run", "--stop", "-fa", "-s", "1"}));
  EXPECT_EQ(normalize_llama_args({"gguf", "--", "-sys"}), (Args{"gguf", "--", "-sys"}));
  EXPECT_EQ(normalize_llama_args({}), Args{});
}

TEST(LlamaArgs, RunInConversationModeIsChat) {
  EXPECT_EQ(normalize_llama_args({"run", "-m", "m.gguf", "-cnv", "-p", "You are a pirate."}),
            (Args{"chat", "-m", "m.gguf", "--system-prompt", "You are a pirate."}));
  EXPECT_EQ(normalize_llama_args({"--log-level", "warn", "run", "--conversation", "-m", "m"}),
            (Args{"--log-level", "warn", "chat", "-m", "m"}));
  // Flags that say what the command does anyway are dropped.
  EXPECT_EQ(normalize_llama_args({"run", "-no-cnv", "-p", "x"}), (Args{"run", "-p", "x"}));
  EXPECT_EQ(normalize_llama_args({"chat", "-cnv", "-m", "m"}), (Args{"chat", "-m", "m"}));
  // "-cnv" as the prompt's text is not the flag.
  EXPECT_EQ(normalize_llama_args({"run", "-p", "-cnv"}), (Args{"run", "-p", "-cnv"}));
}

}  // namespace
}  // namespace folio::tools
