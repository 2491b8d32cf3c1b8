// `folio chat -m MODEL`: interactive chat. Each turn renders the whole
// conversation with the model's chat template (tokenizer.chat_template, by
// folio's Jinja engine) and generates the reply; the KV cache keeps the
// conversation, so a turn only prefills what is new. Lines typed at the
// prompt: text = a user message, /reset = start over, /exit (or EOF) = quit.
//
// A model without a template gets a built-in format (cli_common's
// pick_chat_template): Gemma's turns for gemma architectures (their base
// models ship none), ChatML otherwise (the ChatTemplate fallback, logged).
#include <cstdio>
#include <iostream>
#include <string>
#include <unistd.h>

#include "cli_common.h"
#include "commands.h"
#include "engine/generator.h"
#include "tokenizer/chat_template.h"

namespace folio::tools {

namespace {

struct ChatFlags {
  ModelFlags model;
  SamplingFlags sampling;
  std::string system;
  int64_t n_predict = 512;
};

int chat(const ChatFlags& f) {
  auto lm = load_for_generation(f.model);
  if (!lm.ok()) {
    std::fprintf(stderr, "folio: %s\n", lm.status().message().c_str());
    return 1;
  }
  const int32_t n_vocab = static_cast<int32_t>(lm->model->config().n_vocab);
  auto params = sampling_params(f.sampling, n_vocab);
  if (!params.ok()) {
    std::fprintf(stderr, "folio: %s\n", params.status().message().c_str());
    return 1;
  }
  tokenizer::ChatTemplate tmpl = pick_chat_template(*lm);
  if (tmpl.is_fallback()) {
    std::fprintf(stderr, "folio: using the ChatML fallback template (%s)\n",
                 tmpl.fallback_reason().c_str());
  }
  const auto& vocab = lm->tokenizer->vocab();
  Generator gen(*lm->model, *lm->tokenizer, *lm->ctx, *lm->cache);
  GenerateOptions go;
  go.n_predict = f.n_predict;
  go.n_batch = f.model.batch_size;
  std::vector<tokenizer::ChatMessage> messages;
  if (!f.system.empty()) messages.push_back(tokenizer::ChatMessage::text("system", f.system));
  const bool interactive = isatty(STDIN_FILENO);
  std::fprintf(stderr, "folio: chat ready; /reset starts over, /exit or Ctrl-D quits\n");
  std::string line;
  for (;;) {
    if (interactive) std::fputs("> ", stderr);
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      messages.resize(f.system.empty() ? 0 : 1);
      gen.reset();
      continue;
    }
    if (line.empty()) continue;
    messages.push_back(tokenizer::ChatMessage::text("user", line));
    auto prompt_text = tmpl.apply(messages);
    if (!prompt_text.ok()) {
      std::fprintf(stderr, "folio: %s\n", prompt_text.status().message().c_str());
      messages.pop_back();
      continue;
    }
    tokenizer::TokenizeOptions to;
    to.add_special = false;  // the template writes BOS itself where the model wants it
    to.parse_special = true;
    std::vector<int32_t> prompt = lm->tokenizer->tokenize(*prompt_text, to);
    if (vocab.add_bos() && (prompt.empty() || prompt.front() != vocab.bos())) {
      prompt.insert(prompt.begin(), vocab.bos());
    }
    std::string reply;
    auto stats = gen.generate(prompt, *params, go, [&](std::string_view t) {
      reply += t;
      std::fwrite(t.data(), 1, t.size(), stdout);
      std::fflush(stdout);
      return true;
    });
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (!stats.ok()) {
      std::fprintf(stderr, "folio: %s\n", stats.status().message().c_str());
      messages.pop_back();
      if (stats.status().code() == StatusCode::kOutOfRange) {
        std::fprintf(stderr, "folio: the conversation is full; /reset to start over\n");
      }
      continue;
    }
    messages.push_back(tokenizer::ChatMessage::text("assistant", reply));
    std::fprintf(stderr, "[%lld tokens, %.1f tokens/s]\n", static_cast<long long>(stats->n_generated),
                 stats->gen_seconds > 0 ? stats->n_generated / stats->gen_seconds : 0.0);
  }
  return 0;
}

}  // namespace

void register_chat_command(CLI::App& app, CommandFn* selected) {
  static ChatFlags flags;
  CLI::App* cmd = app.add_subcommand("chat", "interactive chat with the model's chat template");
  add_model_flags(cmd, &flags.model);
  add_sampling_flags(cmd, &flags.sampling);
  cmd->add_option("--system-prompt,--sys", flags.system, "system message");
  cmd->add_option("-n,--n-predict", flags.n_predict, "max tokens per reply (-1 = until end)")
      ->capture_default_str();
  cmd->callback([selected] { *selected = [] { return chat(flags); }; });
}

}  // namespace folio::tools
