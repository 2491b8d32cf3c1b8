#include "gguf/escape.h"

#include <fmt/format.h>

namespace folio::gguf {

std::string escape_string(std::string_view s, size_t max_bytes, char quote) {
  const bool cut = s.size() > max_bytes;
  if (cut) {
    s = s.substr(0, max_bytes);
    // Do not end in the middle of a UTF-8 sequence.
    size_t lead = s.size();
    while (lead > 0 && (static_cast<unsigned char>(s[lead - 1]) & 0xC0) == 0x80) --lead;
    if (lead > 0 && s.size() - lead < 4) {
      const unsigned char c = static_cast<unsigned char>(s[lead - 1]);
      const size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      if (len > 1 && lead - 1 + len > s.size()) s = s.substr(0, lead - 1);
    }
  }
  std::string out;
  out.reserve(s.size() + 8);
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (ch == quote) {
          out += '\\';
          out += ch;
        } else if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out += ch;
        }
    }
  }
  if (cut) out += "...";
  return out;
}

std::string quoted(std::string_view s) {
  return fmt::format("'{}'", escape_string(s, 120, '\''));
}

}  // namespace folio::gguf
