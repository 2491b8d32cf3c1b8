// llama.cpp's spellings of the flags folio shares with it. llama.cpp names
// many options with one dash and several letters (-sys, -cnv, -ngl, -tb,
// -fa, -ub, -np); CLI11 reads "-sys" as the cluster -s -y -s, so such
// arguments are rewritten to folio's double-dash names before parsing.
// `folio run -cnv` (llama-cli's conversation mode) becomes `folio chat`,
// with -p/--prompt as the system prompt, as llama-cli treats it there.
#pragma once

#include <string>
#include <vector>

namespace folio::tools {

// args: the command line without the program name. Only whole arguments are
// rewritten ("-sys" and "-sys=TEXT"); values are never touched, so a prompt
// that reads "-sys" after -p stays as it is.
std::vector<std::string> normalize_llama_args(std::vector<std::string> args);

}  // namespace folio::tools
