// llama_pre_splits: llama.cpp's own pre-tokenizer split of texts, for
// scripts/gen_pre_splits.py.
//
//   llama_pre_splits REGEX...   < texts (one hex-encoded UTF-8 text a line)
//
// Splits each text with llama.cpp's unicode_regex_split (src/unicode.h;
// libllama exports it) under the given regexes, applied in order as
// llama.cpp's BPE tokenizer applies a pre-type's regex_exprs, without the
// byte-level encoding, and prints the pieces of each text on one line,
// hex-encoded and separated by spaces.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

// Declared in llama.cpp's src/unicode.h (not a public header).
std::vector<std::string> unicode_regex_split(const std::string& text,
                                             const std::vector<std::string>& regex_exprs,
                                             bool byte_encode);

namespace {

std::string unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string to_hex(const std::string& s) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s REGEX... < hex texts\n", argv[0]);
    return 2;
  }
  const std::vector<std::string> exprs(argv + 1, argv + argc);
  std::string line;
  while (std::getline(std::cin, line)) {
    const std::vector<std::string> pieces = unicode_regex_split(unhex(line), exprs, false);
    std::string joined;
    for (const std::string& p : pieces) {
      if (!joined.empty()) joined += ' ';
      joined += to_hex(p);
    }
    std::printf("%s\n", joined.c_str());
  }
  return 0;
}
