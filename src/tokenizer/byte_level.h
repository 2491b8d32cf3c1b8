// GPT-2's byte-level alphabet: every byte maps to one printable code point so
// BPE vocabularies can be stored as text. Bytes 0x21..0x7E, 0xA1..0xAC and
// 0xAE..0xFF map to themselves; the other 68 bytes (controls, space, DEL,
// 0x80..0xA0, soft hyphen) map in byte order to U+0100, U+0101, ... U+0143.
// A space therefore reads "Ġ" (U+0120) and a newline "Ċ" (U+010A).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace folio::tokenizer {

// The code point that stands for byte b.
uint32_t byte_to_unicode(uint8_t b);
// The byte code point cp stands for, or -1 if cp is not in the alphabet.
int unicode_to_byte(uint32_t cp);

// Appends the byte-level encoding of `bytes` (UTF-8 of the mapped code points).
void byte_level_encode(std::string_view bytes, std::string* out);
// Decodes byte-level text back to bytes. A code point outside the alphabet is
// copied as its UTF-8 (so text of added tokens survives).
void byte_level_decode(std::string_view text, std::string* out);

}  // namespace folio::tokenizer
