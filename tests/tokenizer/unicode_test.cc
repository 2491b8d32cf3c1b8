// Unicode classes, UTF-8 decoding of valid and invalid input with the
// tokenizers' policies (core/utf8.h), and GPT-2's byte-level alphabet.
#include <gtest/gtest.h>

#include <string>

#include "core/utf8.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"

namespace folio::tokenizer {
namespace unicode_test {

TEST(Unicode, Classes) {
  EXPECT_EQ(char_class('a'), CharClass::kLetter);
  EXPECT_EQ(char_class(U'Ä'), CharClass::kLetter);
  EXPECT_EQ(char_class(U'ж'), CharClass::kLetter);
  EXPECT_EQ(char_class(U'中'), CharClass::kLetter);
  EXPECT_EQ(char_class(0x1E900), CharClass::kLetter);  // ADLAM CAPITAL ALIF
  EXPECT_EQ(char_class(0x0301), CharClass::kMark);     // combining acute
  EXPECT_EQ(char_class(0x093F), CharClass::kMark);     // DEVANAGARI VOWEL SIGN I (Mc)
  EXPECT_EQ(char_class('7'), CharClass::kNumber);
  EXPECT_EQ(char_class(0x0663), CharClass::kNumber);  // ARABIC-INDIC DIGIT THREE
  EXPECT_EQ(char_class(U'½'), CharClass::kNumber);    // No
  EXPECT_EQ(char_class(U'Ⅻ'), CharClass::kNumber);    // Nl
  EXPECT_EQ(char_class('!'), CharClass::kPunct);
  EXPECT_EQ(char_class(U'“'), CharClass::kPunct);
  EXPECT_EQ(char_class('$'), CharClass::kSymbol);
  EXPECT_EQ(char_class(0x1F680), CharClass::kSymbol);  // rocket
  EXPECT_EQ(char_class(' '), CharClass::kSeparator);
  EXPECT_EQ(char_class(0x3000), CharClass::kSeparator);
  EXPECT_EQ(char_class('\n'), CharClass::kOther);
  EXPECT_EQ(char_class(0x200D), CharClass::kOther);  // ZWJ (Cf)
  EXPECT_EQ(char_class(0x10FFFF), CharClass::kOther);
  EXPECT_EQ(char_class(kInvalidByteBase + 0xFF), CharClass::kOther);
}

TEST(Unicode, WhiteSpace) {
  for (uint32_t cp : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u,
                      0x200Au, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u}) {
    EXPECT_TRUE(is_whitespace(cp)) << std::hex << cp;
  }
  for (uint32_t cp : {0x08u, 0x1Cu, 0x41u, 0x200Bu, 0x180Eu, 0xFEFFu, kInvalidByteBase + 0x20}) {
    EXPECT_FALSE(is_whitespace(cp)) << std::hex << cp;
  }
  EXPECT_EQ(cp_flags('\n'), kCpSpace | kCpNewline);
  EXPECT_EQ(cp_flags(' '), kCpSpace);
  EXPECT_EQ(cp_flags('x'), kCpLetter);
}

TEST(Unicode, DecodesValidUtf8) {
  const std::string s = "a\xC3\xA4\xE2\x82\xAC\xF0\x9F\xA6\x99";  // a ä € 🦙
  Utf8Char c = utf8_decode(s, 0, Utf8Invalid::kByteAboveUnicode);
  EXPECT_EQ(c.cp, 'a');
  EXPECT_EQ(c.len, 1u);
  c = utf8_decode(s, 1, Utf8Invalid::kByteAboveUnicode);
  EXPECT_EQ(c.cp, 0xE4u);
  EXPECT_EQ(c.len, 2u);
  c = utf8_decode(s, 3, Utf8Invalid::kByteAboveUnicode);
  EXPECT_EQ(c.cp, 0x20ACu);
  EXPECT_EQ(c.len, 3u);
  c = utf8_decode(s, 6, Utf8Invalid::kByteAboveUnicode);
  EXPECT_EQ(c.cp, 0x1F999u);
  EXPECT_EQ(c.len, 4u);
}

TEST(Unicode, InvalidUtf8DecodesBytewise) {
  const char* bad[] = {
      "\x80",              // stray continuation
      "\xC0\xAF",          // overlong '/'
      "\xC1\xBF",          // overlong
      "\xE0\x80\xAF",      // overlong 3-byte
      "\xED\xA0\x80",      // surrogate U+D800
      "\xF0\x80\x80\xAF",  // overlong 4-byte
      "\xF4\x90\x80\x80",  // U+110000
      "\xF5\x80\x80\x80",  // invalid lead
      "\xFF",
      "\xE2\x82",      // truncated
      "\xC3",          // truncated at end
      "\xE2\x28\xA1",  // bad continuation
  };
  for (const char* b : bad) {
    const std::string s(b);
    const Utf8Char c = utf8_decode(s, 0, Utf8Invalid::kByteAboveUnicode);
    EXPECT_EQ(c.len, 1u) << s.size();
    EXPECT_EQ(c.cp, kInvalidByteBase + static_cast<uint8_t>(s[0]));
  }
}

TEST(Unicode, EncodesUtf8) {
  std::string s;
  utf8_append('a', &s, Utf8Unencodable::kReplace);
  utf8_append(0xE4, &s, Utf8Unencodable::kReplace);
  utf8_append(0x20AC, &s, Utf8Unencodable::kReplace);
  utf8_append(0x1F999, &s, Utf8Unencodable::kReplace);
  EXPECT_EQ(s, "a\xC3\xA4\xE2\x82\xAC\xF0\x9F\xA6\x99");
  s.clear();
  utf8_append(0xD800, &s, Utf8Unencodable::kReplace);
  utf8_append(0x110000, &s, Utf8Unencodable::kReplace);
  EXPECT_EQ(s, "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Unicode, DecodedTextOffsets) {
  DecodedText t;
  t.decode(
      "a\xC3\xA4\xFF"
      "b");
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t.cps[1], 0xE4u);
  EXPECT_EQ(t.cps[2], kInvalidByteBase + 0xFF);
  EXPECT_EQ(t.offs, (std::vector<size_t>{0, 1, 3, 4, 5}));
}

TEST(ByteLevel, Alphabet) {
  EXPECT_EQ(byte_to_unicode('!'), static_cast<uint32_t>('!'));
  EXPECT_EQ(byte_to_unicode('~'), static_cast<uint32_t>('~'));
  EXPECT_EQ(byte_to_unicode(0xA1), 0xA1u);
  EXPECT_EQ(byte_to_unicode(0xFF), 0xFFu);
  EXPECT_EQ(byte_to_unicode(0x00), 0x100u);
  EXPECT_EQ(byte_to_unicode('\n'), 0x10Au);  // "Ċ"
  EXPECT_EQ(byte_to_unicode(' '), 0x120u);   // "Ġ"
  EXPECT_EQ(byte_to_unicode(0x7F), 0x121u);
  EXPECT_EQ(byte_to_unicode(0xA0), 0x142u);
  EXPECT_EQ(byte_to_unicode(0xAD), 0x143u);
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(unicode_to_byte(byte_to_unicode(static_cast<uint8_t>(b))), b);
  }
  EXPECT_EQ(unicode_to_byte(0x144), -1);
  EXPECT_EQ(unicode_to_byte(' '), -1);
}

TEST(ByteLevel, RoundTripsEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string enc, dec;
  byte_level_encode(all, &enc);
  byte_level_decode(enc, &dec);
  EXPECT_EQ(dec, all);
  enc.clear();
  byte_level_encode(" hi\n", &enc);
  EXPECT_EQ(enc, "\xC4\xA0hi\xC4\x8A");  // "Ġhi" "Ċ"
}

}  // namespace
}  // namespace folio::tokenizer
