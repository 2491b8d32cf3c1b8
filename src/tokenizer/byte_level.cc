#include "tokenizer/byte_level.h"

#include <array>

#include "core/utf8.h"
#include "tokenizer/unicode.h"

namespace folio::tokenizer {

namespace {

bool maps_to_itself(uint32_t b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<uint32_t, 256> to_cp{};
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 0x144> from_cp{};  // code points 0..0x143
};

const Tables& tables() {
  static const Tables t = [] {
    Tables t;
    t.from_cp.fill(-1);
    uint32_t next = 0x100;
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t cp = maps_to_itself(b) ? b : next++;
      t.to_cp[b] = cp;
      utf8_append(cp, &t.to_utf8[b], Utf8Unencodable::kReplace);
      t.from_cp[cp] = static_cast<int16_t>(b);
    }
    return t;
  }();
  return t;
}

}  // namespace

uint32_t byte_to_unicode(uint8_t b) {
  return tables().to_cp[b];
}

int unicode_to_byte(uint32_t cp) {
  return cp < 0x144 ? tables().from_cp[cp] : -1;
}

void byte_level_encode(std::string_view bytes, std::string* out) {
  const Tables& t = tables();
  for (char c : bytes) *out += t.to_utf8[static_cast<uint8_t>(c)];
}

void byte_level_decode(std::string_view text, std::string* out) {
  for (size_t i = 0; i < text.size();) {
    const Utf8Char c = utf8_decode(text, i, Utf8Invalid::kByteAboveUnicode);
    const int b = unicode_to_byte(c.cp);
    if (b >= 0) {
      out->push_back(static_cast<char>(b));
    } else {
      out->append(text.substr(i, c.len));
    }
    i += c.len;
  }
}

}  // namespace folio::tokenizer
