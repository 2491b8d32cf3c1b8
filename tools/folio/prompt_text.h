// Prompt text from the command line: escape sequences (-e, on by default as
// in llama.cpp) and prompts read from a file or standard input.
#pragma once

#include <string>

#include "core/status.h"

namespace folio::tools {

// Replaces \n \r \t \a \b \f \v \\ \' \" \? \0 and \xHH (one or two hex
// digits) by the characters they name; any other backslash stays as typed.
std::string process_escapes(const std::string& text);

// The whole of `path` ("-": standard input) as text.
Result<std::string> read_text_file(const std::string& path);

}  // namespace folio::tools
