// `folio tokenize -m MODEL [--no-bos] [--parse-special] TEXT`: prints TEXT's
// token ids under MODEL's vocabulary, separated by single spaces, on one
// line. BOS (and EOS, for the rare vocabularies that add one) are added as
// the vocabulary says unless --no-bos; --parse-special turns special-token
// texts such as "<|im_start|>" into their tokens. Errors go to stderr as
// "folio: <message>", exit code 1.
#include <cstdio>
#include <string>

#include "commands.h"
#include "tokenizer/tokenizer.h"

namespace folio::tools {

void register_tokenize_command(CLI::App& app, CommandFn* selected) {
  CLI::App* cmd = app.add_subcommand("tokenize", "print the token ids of a text");
  static std::string model;
  static std::string text;
  static bool no_bos = false;
  static bool parse_special = false;
  cmd->add_option("-m,--model", model, "GGUF model (or vocabulary-only) file")->required();
  cmd->add_flag("--no-bos", no_bos, "do not add the BOS (or EOS) token the vocabulary asks for");
  cmd->add_flag(
      "--parse-special", parse_special,
      "tokenize special-token texts (<|im_start|>, <start_of_turn>, ...) as those tokens");
  cmd->add_option("text", text, "text to tokenize")->required();
  cmd->callback([selected] {
    *selected = [] {
      Result<tokenizer::Tokenizer> tok = tokenizer::Tokenizer::open(model);
      if (!tok.ok()) {
        std::fprintf(stderr, "folio: %s\n", tok.status().message().c_str());
        return 1;
      }
      const std::vector<tokenizer::TokenId> ids =
          tok->tokenize(text, {.add_special = !no_bos, .parse_special = parse_special});
      std::string line;
      for (tokenizer::TokenId id : ids) {
        if (!line.empty()) line.push_back(' ');
        line += std::to_string(id);
      }
      line.push_back('\n');
      if (std::fwrite(line.data(), 1, line.size(), stdout) != line.size() ||
          std::fflush(stdout) != 0) {
        std::fprintf(stderr, "folio: cannot write to stdout\n");
        return 1;
      }
      return 0;
    };
  });
}

}  // namespace folio::tools
