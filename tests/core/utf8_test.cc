// The UTF-8 codec (core/utf8.h): valid input at every length boundary, each
// kind of invalid input under each policy, encoding under each policy, the
// byte-by-byte decoder agreeing with the one-shot one, and the incomplete
// tail a stream holds back.
#include "core/utf8.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace folio {
namespace utf8_test {

constexpr Utf8Invalid kAllInvalidPolicies[] = {Utf8Invalid::kError, Utf8Invalid::kReplace,
                                               Utf8Invalid::kByteAboveUnicode,
                                               Utf8Invalid::kSurrogateEscape};

// What each policy gives for the invalid byte b.
uint32_t invalid_value(Utf8Invalid policy, uint8_t b) {
  switch (policy) {
    case Utf8Invalid::kError:
      return 0;
    case Utf8Invalid::kReplace:
      return kReplacementChar;
    case Utf8Invalid::kByteAboveUnicode:
      return kInvalidByteBase + b;
    case Utf8Invalid::kSurrogateEscape:
      return kSurrogateEscapeBase + b;
  }
  return 0;
}

std::string bytes(std::initializer_list<int> list) {
  std::string s;
  for (int b : list) s.push_back(static_cast<char>(b));
  return s;
}

std::string encode(uint32_t cp, Utf8Unencodable policy = Utf8Unencodable::kReplace) {
  std::string s;
  utf8_append(cp, &s, policy);
  return s;
}

TEST(Utf8, DecodesValidSequencesAtEveryLengthBoundary) {
  struct Case {
    std::string s;
    uint32_t cp;
  };
  const Case cases[] = {
      {bytes({0x00}), 0x00},
      {bytes({0x7F}), 0x7F},
      {bytes({0xC2, 0x80}), 0x80},
      {bytes({0xDF, 0xBF}), 0x7FF},
      {bytes({0xE0, 0xA0, 0x80}), 0x800},
      {bytes({0xED, 0x9F, 0xBF}), 0xD7FF},  // just below the surrogates
      {bytes({0xEE, 0x80, 0x80}), 0xE000},  // just above them
      {bytes({0xEF, 0xBF, 0xBF}), 0xFFFF},
      {bytes({0xF0, 0x90, 0x80, 0x80}), 0x10000},
      {bytes({0xF4, 0x8F, 0xBF, 0xBF}), 0x10FFFF},
  };
  for (const Case& c : cases) {
    for (Utf8Invalid policy : kAllInvalidPolicies) {
      const Utf8Char d = utf8_decode(c.s, 0, policy);
      EXPECT_TRUE(d.valid) << std::hex << c.cp;
      EXPECT_EQ(d.cp, c.cp);
      EXPECT_EQ(d.len, c.s.size());
    }
    EXPECT_EQ(encode(c.cp), c.s);
    EXPECT_EQ(encode(c.cp, Utf8Unencodable::kSurrogateEscape), c.s);
    EXPECT_TRUE(utf8_valid(c.s));
  }
}

TEST(Utf8, DecodesMidString) {
  const std::string s = "a\xC3\xA4\xE2\x82\xAC\xF0\x9F\xA6\x99";  // a ä € 🦙
  const size_t at[] = {0, 1, 3, 6};
  const uint32_t cps[] = {'a', 0xE4, 0x20AC, 0x1F999};
  for (int k = 0; k < 4; ++k) {
    const Utf8Char d = utf8_decode(s, at[k], Utf8Invalid::kError);
    EXPECT_TRUE(d.valid);
    EXPECT_EQ(d.cp, cps[k]);
    EXPECT_EQ(d.len, static_cast<uint32_t>(k + 1));
  }
}

// Every kind of invalid input consumes exactly its first byte, under every
// policy, and gives that policy's value for the byte.
TEST(Utf8, InvalidInputConsumesOneByteUnderEveryPolicy) {
  const std::vector<std::string> bad = {
      bytes({0x80}),                    // stray continuation
      bytes({0xBF, 0x41}),              // stray continuation before ASCII
      bytes({0xC0, 0x80}),              // overlong NUL
      bytes({0xC1, 0xBF}),              // overlong 2-byte
      bytes({0xE0, 0x80, 0xAF}),        // overlong 3-byte
      bytes({0xE0, 0x9F, 0xBF}),        // overlong U+07FF
      bytes({0xF0, 0x80, 0x80, 0xAF}),  // overlong 4-byte
      bytes({0xF0, 0x8F, 0xBF, 0xBF}),  // overlong U+FFFF
      bytes({0xED, 0xA0, 0x80}),        // surrogate U+D800
      bytes({0xED, 0xBF, 0xBF}),        // surrogate U+DFFF
      bytes({0xF4, 0x90, 0x80, 0x80}),  // U+110000
      bytes({0xF5, 0x80, 0x80, 0x80}),  // lead past U+10FFFF
      bytes({0xF8, 0x88, 0x80, 0x80}),  // 5-byte form
      bytes({0xFF}),                    //
      bytes({0xC3}),                    // truncated at the end
      bytes({0xE2, 0x82}),              // truncated 3-byte
      bytes({0xF0, 0x9F, 0xA6}),        // truncated 4-byte
      bytes({0xE2, 0x28, 0xA1}),        // non-continuation second byte
      bytes({0xF0, 0x9F, 0x41, 0x99}),  // non-continuation third byte
  };
  for (const std::string& s : bad) {
    const auto b0 = static_cast<uint8_t>(s[0]);
    for (Utf8Invalid policy : kAllInvalidPolicies) {
      const Utf8Char d = utf8_decode(s, 0, policy);
      EXPECT_FALSE(d.valid) << std::hex << int{b0} << " policy " << static_cast<int>(policy);
      EXPECT_EQ(d.len, 1u);
      EXPECT_EQ(d.cp, invalid_value(policy, b0));
    }
    size_t bad_offset = 99;
    EXPECT_FALSE(utf8_valid("ok" + s, &bad_offset));
    EXPECT_EQ(bad_offset, 2u);
  }
}

TEST(Utf8, ValidReportsTheFirstBadByte) {
  size_t at = 99;
  EXPECT_TRUE(utf8_valid("", &at));
  EXPECT_TRUE(utf8_valid("plain \xE2\x82\xAC", &at));
  EXPECT_EQ(at, 99u);  // untouched when valid
  EXPECT_FALSE(utf8_valid("\xE2\x82\xAC x \xE2\x82", &at));
  EXPECT_EQ(at, 6u);
  EXPECT_FALSE(utf8_valid("\xFF"));
}

TEST(Utf8, EncodeReplacePolicy) {
  EXPECT_EQ(encode(0xD800), "\xEF\xBF\xBD");
  EXPECT_EQ(encode(0xDFFF), "\xEF\xBF\xBD");
  EXPECT_EQ(encode(0x110000), "\xEF\xBF\xBD");
  EXPECT_EQ(encode(kInvalidByteBase + 0xFF), "\xEF\xBF\xBD");
  EXPECT_EQ(encode(0xFFFFFFFF), "\xEF\xBF\xBD");
}

TEST(Utf8, EncodeSurrogateEscapePolicy) {
  constexpr auto kEsc = Utf8Unencodable::kSurrogateEscape;
  EXPECT_EQ(encode(0xDC80, kEsc), bytes({0x80}));
  EXPECT_EQ(encode(0xDCFF, kEsc), bytes({0xFF}));
  // Other surrogates and values past U+10FFFF: their bits, unchecked.
  EXPECT_EQ(encode(0xD800, kEsc), bytes({0xED, 0xA0, 0x80}));
  EXPECT_EQ(encode(0xDC7F, kEsc), bytes({0xED, 0xB1, 0xBF}));
  EXPECT_EQ(encode(0x110000, kEsc), bytes({0xF4, 0x90, 0x80, 0x80}));
}

// Python's guarantee: bytes decoded with surrogateescape and encoded back
// are the same bytes, valid or not.
TEST(Utf8, SurrogateEscapeRoundTripsAnyBytes) {
  std::string s;
  for (int b = 0; b < 256; ++b) {
    s.push_back(static_cast<char>(b));
    s += "\xE2\x82\xAC";
    s.push_back(static_cast<char>(255 - b));
  }
  s += "\xF0\x9F\xA6";  // truncated at the end
  std::string back;
  for (size_t i = 0; i < s.size();) {
    const Utf8Char d = utf8_decode(s, i, Utf8Invalid::kSurrogateEscape);
    utf8_append(d.cp, &back, Utf8Unencodable::kSurrogateEscape);
    i += d.len;
  }
  EXPECT_EQ(back, s);
}

TEST(Utf8, EveryScalarValueRoundTrips) {
  for (uint32_t cp = 0; cp <= kMaxCodePoint; ++cp) {
    if (!is_scalar_value(cp)) continue;
    const std::string s = encode(cp);
    const Utf8Char d = utf8_decode(s, 0, Utf8Invalid::kError);
    ASSERT_TRUE(d.valid) << std::hex << cp;
    ASSERT_EQ(d.cp, cp);
    ASSERT_EQ(d.len, s.size());
    ASSERT_EQ(static_cast<size_t>(utf8_sequence_length(static_cast<uint8_t>(s[0]))), s.size());
  }
}

TEST(Utf8, SequenceLength) {
  EXPECT_EQ(utf8_sequence_length(0x00), 1);
  EXPECT_EQ(utf8_sequence_length(0x7F), 1);
  EXPECT_EQ(utf8_sequence_length(0x80), 0);
  EXPECT_EQ(utf8_sequence_length(0xBF), 0);
  EXPECT_EQ(utf8_sequence_length(0xC0), 0);
  EXPECT_EQ(utf8_sequence_length(0xC1), 0);
  EXPECT_EQ(utf8_sequence_length(0xC2), 2);
  EXPECT_EQ(utf8_sequence_length(0xDF), 2);
  EXPECT_EQ(utf8_sequence_length(0xE0), 3);
  EXPECT_EQ(utf8_sequence_length(0xEF), 3);
  EXPECT_EQ(utf8_sequence_length(0xF0), 4);
  EXPECT_EQ(utf8_sequence_length(0xF4), 4);
  EXPECT_EQ(utf8_sequence_length(0xF5), 0);
  EXPECT_EQ(utf8_sequence_length(0xFF), 0);
}

// Feeds `s` to utf8_step: whether it is whole valid UTF-8.
bool step_accepts(const std::string& s) {
  Utf8State state;
  for (char c : s) {
    if (utf8_step(&state, static_cast<uint8_t>(c)).step == Utf8Step::kInvalid) return false;
  }
  return state.idle();
}

// The byte-by-byte decoder accepts exactly what the one-shot decoder decodes
// as valid: every 1- and 2-byte string, every 3-byte string with a multi-byte
// lead and a boundary third byte, every 4-byte lead with boundary tails.
TEST(Utf8, StepDecoderAgreesWithDecode) {
  const int edges[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xFF};
  std::vector<std::string> all;
  for (int a = 0; a < 256; ++a) {
    all.push_back(bytes({a}));
    for (int b = 0; b < 256; ++b) all.push_back(bytes({a, b}));
  }
  for (int a = 0xC0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      for (int c : edges) all.push_back(bytes({a, b, c}));
    }
  }
  for (int a = 0xF0; a < 0xF8; ++a) {
    for (int b = 0x80; b < 0xC0; ++b) {
      for (int c : edges) {
        for (int d : edges) all.push_back(bytes({a, b, c, d}));
      }
    }
  }
  for (const std::string& s : all) {
    ASSERT_EQ(step_accepts(s), utf8_valid(s)) << ::testing::PrintToString(s);
  }
}

TEST(Utf8, StepGivesTheRangeStillPossible) {
  Utf8State state;
  Utf8Result r = utf8_step(&state, 0xE2);
  EXPECT_EQ(r.step, Utf8Step::kPartial);
  EXPECT_EQ(r.lo, 0x2000u);
  EXPECT_EQ(r.hi, 0x2FFFu);
  r = utf8_step(&state, 0x82);
  EXPECT_EQ(r.step, Utf8Step::kPartial);
  EXPECT_EQ(r.lo, 0x2080u);
  EXPECT_EQ(r.hi, 0x20BFu);
  r = utf8_step(&state, 0xAC);
  EXPECT_EQ(r.step, Utf8Step::kComplete);
  EXPECT_EQ(r.lo, 0x20ACu);
  EXPECT_TRUE(state.idle());
  // Rejected at the first byte that rules out every valid character; the
  // state is left as it was.
  state = {};
  ASSERT_EQ(utf8_step(&state, 0xED).step, Utf8Step::kPartial);
  const Utf8State before = state;
  EXPECT_EQ(utf8_step(&state, 0xA0).step, Utf8Step::kInvalid);  // only surrogates left
  EXPECT_EQ(state, before);
  state = {};
  ASSERT_EQ(utf8_step(&state, 0xF4).step, Utf8Step::kPartial);
  EXPECT_EQ(utf8_step(&state, 0x90).step, Utf8Step::kInvalid);  // past U+10FFFF
  state = {};
  ASSERT_EQ(utf8_step(&state, 0xE0).step, Utf8Step::kPartial);
  EXPECT_EQ(utf8_step(&state, 0x9F).step, Utf8Step::kInvalid);  // overlong
}

TEST(Utf8, IncompleteTail) {
  EXPECT_EQ(utf8_incomplete_tail(""), 0u);
  EXPECT_EQ(utf8_incomplete_tail("abc"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("\xE2\x82"), 2u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE0\x80"), 0u);  // overlong: never completes
  EXPECT_EQ(utf8_incomplete_tail("a\xF4\x90"), 0u);  // past U+10FFFF
  EXPECT_EQ(utf8_incomplete_tail("\x80\x80\x80"), 0u);
  // Every proper prefix of every character's encoding is held back whole,
  // after any complete text.
  for (uint32_t cp = 0x80; cp <= kMaxCodePoint; cp += 0x3F) {
    if (!is_scalar_value(cp)) continue;
    const std::string s = encode(cp);
    for (size_t k = 1; k < s.size(); ++k) {
      ASSERT_EQ(utf8_incomplete_tail("x\xC3\xA4" + s.substr(0, k)), k) << std::hex << cp;
    }
    ASSERT_EQ(utf8_incomplete_tail("x" + s), 0u);
  }
}

}  // namespace utf8_test
}  // namespace folio
