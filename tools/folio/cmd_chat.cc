// `folio chat -m MODEL`: an interactive chat REPL. Each turn renders the
// whole conversation with the model's chat template (tokenizer.chat_template,
// by folio's Jinja engine) and generates the reply; the Generator keeps the
// KV cache's longest common prefix with the new prompt, so a turn only
// prefills what is new. Replies go to stdout; the prompt, /help and key
// hints to the terminal (stderr without one); reply statistics, context
// notices and errors to stderr.
//
// Input (line_editor.h, chat_input.h):
//   - on a terminal: libedit line editing and in-session history (Up/Down);
//     with stdin not a terminal, plain lines are read (no prompt), so a script
//     of lines can be piped in;
//   - a line ending in "\" continues the message on the next line; a line of
//     `"""` opens a block of lines up to the next `"""` line;
//   - /help, /reset (forget the conversation, the system prompt stays),
//     /exit and /quit; "//text" sends "/text"; any other "/word" is reported
//     as an unknown command and not sent.
// Keys (interactive):
//   - Ctrl-C during a reply stops it (a SIGINT handler sets a flag that the
//     text callback checks; generation stops at the next piece of text). As
//     in llama.cpp's conversation mode the text generated so far stays in the
//     conversation as the assistant's turn; a reply stopped before any text
//     leaves no turn (the user's message is dropped too, roles alternate).
//   - Ctrl-C at the prompt discards the line (or the multi-line input being
//     gathered); on an empty line it says how to quit, and a second Ctrl-C
//     in a row quits (exit 0), like Python's REPL.
//   - Ctrl-D on an empty line quits (exit 0) after a newline.
//   With stdin not a terminal, Ctrl-C keeps its default (ends the process).
// Context shifting (chat_context.h): when the conversation and room for the
// reply (n_predict, at most half the context) do not fit the context, the
// oldest user/assistant pairs are dropped, the system prompt kept, and the
// conversation re-rendered; stderr says how many. A message that does not
// fit even alone (with the system prompt) is reported and not sent; the
// session goes on. A reply that reaches the end of the context is cut there
// and kept; the next turn shifts.
//
// A model without a template gets a built-in format (cli_common's
// pick_chat_template): Gemma's turns for gemma architectures (their base
// models ship none), ChatML otherwise (the ChatTemplate fallback, logged).
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "chat_context.h"
#include "chat_input.h"
#include "cli_common.h"
#include "commands.h"
#include "engine/generator.h"
#include "line_editor.h"
#include "prompt_text.h"
#include "chat/chat_template.h"

namespace folio::tools {

namespace {

struct ChatFlags {
  ModelFlags model;
  SamplingFlags sampling;
  SpecFlags spec;
  std::string system;
  bool escape = true;
  int64_t n_predict = -1;
  bool ignore_eos = false;
};

// Set by SIGINT while a chat is interactive; the reply's text callback reads it.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

extern "C" void on_sigint(int) {
  g_interrupted.store(true, std::memory_order_relaxed);
}

// Installs on_sigint for its lifetime. SA_RESTART: an interrupted write of
// reply text is resumed rather than failed.
class SigintScope {
 public:
  SigintScope() {
    struct sigaction sa = {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, &old_);
  }
  ~SigintScope() { sigaction(SIGINT, &old_, nullptr); }
  SigintScope(const SigintScope&) = delete;
  SigintScope& operator=(const SigintScope&) = delete;

 private:
  struct sigaction old_ = {};
};

class ChatSession {
 public:
  ChatSession(const ChatFlags& f, LoadedModel& lm, const SamplingParams& params,
              const SpeculativeOptions& spec)
      : f_(f),
        lm_(lm),
        params_(params),
        tmpl_(pick_chat_template(lm)),
        gen_(*lm.model, *lm.tokenizer, *lm.ctx, *lm.cache) {
    if (!f.system.empty()) {
      messages_.push_back(chat::ChatMessage::text(
          "system", f.escape ? process_escapes(f.system) : f.system));
    }
    options_.n_predict = f.n_predict;
    options_.n_batch = prefill_chunk(f.model);
    options_.ignore_eos = f.ignore_eos;
    options_.spec = spec;
  }

  const chat::ChatTemplate& chat_template() const { return tmpl_; }

  void reset() {
    messages_.resize(n_system());
    gen_.reset();
  }

  // One user message and its reply.
  void turn(const std::string& text);

 private:
  size_t n_system() const { return f_.system.empty() ? 0 : 1; }
  // Tokens of the conversation with its `drop` oldest user/assistant pairs left out.
  Result<std::vector<int32_t>> render(size_t drop) const;

  const ChatFlags& f_;
  LoadedModel& lm_;
  const SamplingParams& params_;
  chat::ChatTemplate tmpl_;
  Generator gen_;
  GenerateOptions options_;
  // [system], then user/assistant pairs; a user message at the end during a turn.
  std::vector<chat::ChatMessage> messages_;
};

Result<std::vector<int32_t>> ChatSession::render(size_t drop) const {
  std::vector<chat::ChatMessage> kept(messages_.begin(), messages_.begin() + n_system());
  kept.insert(kept.end(), messages_.begin() + n_system() + 2 * drop, messages_.end());
  FOLIO_ASSIGN_OR_RETURN(std::string text, tmpl_.apply(kept));
  tokenizer::TokenizeOptions to;
  to.add_special = false;  // the template writes BOS itself where the model wants it
  to.parse_special = true;
  std::vector<int32_t> tokens = lm_.tokenizer->tokenize(text, to);
  const auto& vocab = lm_.tokenizer->vocab();
  if (vocab.add_bos() && (tokens.empty() || tokens.front() != vocab.bos())) {
    tokens.insert(tokens.begin(), vocab.bos());
  }
  return tokens;
}

void ChatSession::turn(const std::string& text) {
  messages_.push_back(chat::ChatMessage::text("user", text));
  const int64_t n_ctx = lm_.cache->n_ctx();
  const size_t n_pairs = (messages_.size() - n_system() - 1) / 2;
  // fit_conversation asks for k = 0, 1, ... and stops at the k it returns,
  // so the last rendering is the prompt to use.
  std::vector<int32_t> prompt;
  auto fit = fit_conversation(n_pairs, n_ctx, reply_room(f_.n_predict, n_ctx),
                              [&](size_t drop) -> Result<int64_t> {
                                FOLIO_ASSIGN_OR_RETURN(prompt, render(drop));
                                return static_cast<int64_t>(prompt.size());
                              });
  if (!fit.ok()) {
    messages_.pop_back();
    if (fit.status().code() == StatusCode::kOutOfRange) {
      std::fprintf(stderr, "folio: message not sent: %s; the conversation goes on\n",
                   fit.status().message().c_str());
    } else {
      std::fprintf(stderr, "folio: %s\n", fit.status().message().c_str());
    }
    return;
  }
  if (fit->pairs_dropped > 0) {
    messages_.erase(messages_.begin() + n_system(),
                    messages_.begin() + n_system() + 2 * fit->pairs_dropped);
    std::fprintf(stderr, "folio: context full: dropped the %zu oldest turn%s of the conversation\n",
                 fit->pairs_dropped, fit->pairs_dropped == 1 ? "" : "s");
  }
  if (fit->short_of_room) {
    std::fprintf(stderr, "folio: only %lld tokens of context left for the reply\n",
                 static_cast<long long>(n_ctx - fit->n_prompt));
  }

  std::string reply;
  // A Ctrl-C from here on stops this reply (one before is no longer wanted).
  g_interrupted.store(false, std::memory_order_relaxed);
  auto stats = gen_.generate(prompt, params_, options_, [&](std::string_view t) {
    if (g_interrupted.load(std::memory_order_relaxed)) return false;
    reply += t;
    std::fwrite(t.data(), 1, t.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  // The Ctrl-C that stopped this reply is spent.
  g_interrupted.store(false, std::memory_order_relaxed);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!stats.ok()) {
    std::fprintf(stderr, "folio: %s\n", stats.status().message().c_str());
    messages_.pop_back();
    return;
  }
  const char* note = "";
  if (stats->stop == StopReason::kCancelled) note = ", stopped";
  if (stats->stop == StopReason::kContextFull) note = ", cut: context full";
  // The chat's own status lines (ready, per-reply stats) are part of its
  // interface, not logging: --log-level does not hide them.
  std::fprintf(stderr, "[%lld tokens, %.1f tokens/s%s]\n",
               static_cast<long long>(stats->n_generated),
               stats->gen_seconds > 0 ? stats->n_generated / stats->gen_seconds : 0.0, note);
  if (reply.empty() && stats->stop == StopReason::kCancelled) {
    messages_.pop_back();
    return;
  }
  messages_.push_back(chat::ChatMessage::text("assistant", reply));
}

int chat(const ChatFlags& f) {
  auto spec = spec_options(f.spec);
  if (!spec.ok()) return fail(spec.status());
  warn_about_model_flags(f.model);
  auto lm = load_for_generation(f.model, *spec);
  if (!lm.ok()) return fail(lm.status());
  if (const Status st = load_draft(f.model, f.spec, 1, &*lm, &*spec); !st.ok()) return fail(st);
  const int32_t n_vocab = static_cast<int32_t>(lm->model->config().n_vocab);
  auto params = sampling_params(f.sampling, n_vocab);
  if (!params.ok()) return fail(params.status());
  ChatSession session(f, *lm, *params, *spec);
  if (session.chat_template().is_fallback()) {
    std::fprintf(stderr, "folio: using the ChatML fallback template (%s)\n",
                 session.chat_template().fallback_reason().c_str());
  }

  LineEditor editor("folio", &g_interrupted);
  std::optional<SigintScope> sigint;
  if (editor.interactive()) sigint.emplace();
  // Help and hints go where the prompt is drawn; without a terminal, stderr.
  std::FILE* notices = editor.interactive() ? editor.terminal() : stderr;
  std::fprintf(stderr,
               "folio: chat ready; /help lists commands, Ctrl-C stops a reply, "
               "Ctrl-D or /exit quits\n");

  InputAssembler assembler;
  bool quit_armed = false;  // the last key was Ctrl-C on an empty prompt
  std::string line;
  for (;;) {
    // A Ctrl-C typed while no line is being edited (between a reply and the
    // next prompt) arrives as a signal; the editor notices it through
    // g_interrupted and ends the read as it does for the key.
    const LineEditor::Read r = editor.read_line(assembler.pending() ? "... " : "> ", &line);
    if (r == LineEditor::Read::kInterrupted) {
      if (!editor.interactive()) break;
      if (!line.empty() || assembler.pending()) {
        assembler.clear();
        quit_armed = false;
        continue;
      }
      if (quit_armed) break;
      quit_armed = true;
      std::fputs("(Ctrl-C again or Ctrl-D quits)\n", notices);
      continue;
    }
    quit_armed = false;
    if (r == LineEditor::Read::kEof) {
      if (editor.interactive()) std::fputc('\n', editor.terminal());
      if (assembler.pending()) {
        std::fprintf(stderr, "folio: end of input inside a multi-line message; not sent\n");
      }
      break;
    }
    editor.add_history(line);
    InputAssembler::Input input;
    if (!assembler.add_line(line, &input)) continue;
    const ParsedInput p = parse_chat_input(input);
    switch (p.command) {
      case ChatCommand::kEmpty:
        continue;
      case ChatCommand::kHelp:
        std::fputs(chat_help_text(), notices);
        continue;
      case ChatCommand::kReset:
        session.reset();
        std::fputs("folio: conversation cleared\n", notices);
        continue;
      case ChatCommand::kExit:
        return 0;
      case ChatCommand::kUnknown:
        std::fprintf(stderr, "folio: unknown command %s (try /help)\n", p.text.c_str());
        continue;
      case ChatCommand::kBadArguments:
        std::fprintf(stderr, "folio: %s takes no arguments (try /help)\n", p.text.c_str());
        continue;
      case ChatCommand::kText:
        session.turn(p.text);
        continue;
    }
  }
  return 0;
}

}  // namespace

void register_chat_command(CLI::App& app, CommandFn* selected) {
  static ChatFlags flags;
  CLI::App* cmd = app.add_subcommand("chat", "interactive chat with the model's chat template");
  add_model_flags(cmd, &flags.model);
  add_sampling_flags(cmd, &flags.sampling);
  add_spec_flags(cmd, &flags.spec);
  cmd->add_option("--system-prompt", flags.system, "system message (also -sys)");
  cmd->add_flag("-e,--escape,!--no-escape", flags.escape,
                "process escape sequences (\\n, \\t, ...) in the system prompt (default: on)");
  add_n_predict_flag(cmd, &flags.n_predict, "max tokens per reply");
  cmd->add_flag("--ignore-eos", flags.ignore_eos, "keep generating past end-of-generation tokens");
  cmd->callback([selected] { *selected = [] { return chat(flags); }; });
}

}  // namespace folio::tools
