// Matchers: each returns the length (in code points) of the regex match that
// starts at code point i of the piece [.., e), or 0 if no alternative matches
// there. The splitter scans left to right like a regex `find_iter`.
#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <array>
#include <utility>

namespace folio::tokenizer {

namespace {

using Matcher = size_t (*)(const DecodedText& t, size_t i, size_t e);

struct Range {
  uint32_t lo, hi;
};

bool in_ranges(uint32_t cp, const Range* ranges, size_t n) {
  for (size_t k = 0; k < n; ++k) {
    if (cp >= ranges[k].lo && cp <= ranges[k].hi) return true;
  }
  return false;
}

bool has(const DecodedText& t, size_t i, uint8_t mask) {
  return (t.flags[i] & mask) != 0;
}

// First index >= i (and <= e) whose flags do not intersect `mask`.
size_t run_of(const DecodedText& t, size_t i, size_t e, uint8_t mask) {
  while (i < e && has(t, i, mask)) ++i;
  return i;
}

// First index >= i whose flags intersect `mask` (or e).
size_t run_without(const DecodedText& t, size_t i, size_t e, uint8_t mask) {
  while (i < e && !has(t, i, mask)) ++i;
  return i;
}

uint32_t ascii_lower(uint32_t cp) {
  return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
}

// 's|'t|'re|'ve|'m|'ll|'d, optionally ASCII case-insensitive.
size_t match_contraction(const DecodedText& t, size_t i, size_t e, bool ci) {
  if (t.cps[i] != '\'' || i + 1 >= e) return 0;
  auto at = [&](size_t k) { return ci ? ascii_lower(t.cps[k]) : t.cps[k]; };
  const uint32_t c1 = at(i + 1);
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (i + 2 >= e) return 0;
  const uint32_t c2 = at(i + 2);
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

// \s+(?!\S)|\s+ at a whitespace code point: the run, less its last code point
// when a non-space follows and the run is longer than one.
size_t match_space_run(const DecodedText& t, size_t i, size_t e) {
  const size_t k = run_of(t, i, e, kCpSpace);
  if (k == e || k - i == 1) return k - i;
  return k - i - 1;
}

constexpr uint8_t kLetterNumberSpace = kCpLetter | kCpNumber | kCpSpace;

// gpt2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
size_t match_gpt2(const DecodedText& t, size_t i, size_t e) {
  if (size_t n = match_contraction(t, i, e, /*ci=*/false)) return n;
  // An optional leading ' ' binds to the run that follows it.
  const size_t k = (t.cps[i] == ' ' && i + 1 < e) ? i + 1 : i;
  if (has(t, k, kCpLetter)) return run_of(t, k, e, kCpLetter) - i;
  if (has(t, k, kCpNumber)) return run_of(t, k, e, kCpNumber) - i;
  if (!has(t, k, kLetterNumberSpace)) return run_without(t, k, e, kLetterNumberSpace) - i;
  // k == i + 1 and t[k] is a space: the leading space is part of a space run.
  return match_space_run(t, i, e);
}

// The llama3 family:
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?LETTERS+|\p{N}{1,D}|
//    ?OTHER+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// where LETTERS is \p{L} (or [\p{L}\p{M}] for qwen35) and OTHER is
// [^\s\p{L}\p{N}] (or [^\s\p{L}\p{M}\p{N}]); seed-coder's OTHER+ takes no
// newlines after it (kNewlinesAfterOther false).
template <size_t kMaxDigits, bool kMarksAreLetters, bool kNewlinesAfterOther = true>
size_t match_llama3_family(const DecodedText& t, size_t i, size_t e) {
  constexpr uint8_t kLetters = kMarksAreLetters ? (kCpLetter | kCpMark) : kCpLetter;
  constexpr uint8_t kNotOther = kLetters | kCpNumber | kCpSpace;
  if (size_t n = match_contraction(t, i, e, /*ci=*/true)) return n;
  if (has(t, i, kLetters)) return run_of(t, i, e, kLetters) - i;
  if (!has(t, i, kCpNewline | kCpLetter | kCpNumber) && i + 1 < e && has(t, i + 1, kLetters)) {
    return run_of(t, i + 1, e, kLetters) - i;
  }
  if (has(t, i, kCpNumber)) return std::min(run_of(t, i, e, kCpNumber) - i, kMaxDigits);
  const size_t k = (t.cps[i] == ' ' && i + 1 < e && !has(t, i + 1, kNotOther)) ? i + 1 : i;
  if (!has(t, k, kNotOther)) {
    const size_t end = run_without(t, k, e, kNotOther);
    return (kNewlinesAfterOther ? run_of(t, end, e, kCpNewline) : end) - i;
  }
  if (!has(t, i, kCpSpace)) return 0;  // unreachable: every code point has a class
  // \s*[\r\n]+ : up to and including the last newline of the space run.
  const size_t k_end = run_of(t, i, e, kCpSpace);
  for (size_t p = k_end; p > i; --p) {
    if (has(t, p - 1, kCpNewline)) return p - i;
  }
  return match_space_run(t, i, e);
}

// --- gpt-4o (o200k) -----------------------------------------------------------
//   [^\r\n\p{L}\p{N}]?UPPER*LOWER+CONTRACTION?|[^\r\n\p{L}\p{N}]?UPPER+LOWER*CONTRACTION?|
//   \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
// UPPER = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], LOWER = [\p{Ll}\p{Lm}\p{Lo}\p{M}]
// (Lm, Lo and marks are in both), CONTRACTION = (?i:'s|'t|'re|'ve|'m|'ll|'d)
// with ASCII case folding.

bool o200k_upper(const DecodedText& t, size_t k) {
  if (has(t, k, kCpMark)) return true;
  return has(t, k, kCpLetter) && letter_case(t.cps[k]) != LetterCase::kLower;
}

bool o200k_lower(const DecodedText& t, size_t k) {
  if (has(t, k, kCpMark)) return true;
  return has(t, k, kCpLetter) && letter_case(t.cps[k]) != LetterCase::kUpper;
}

// Unicode 14's Script=Han (what \p{Han} matches in tokenization_kimi.py's
// regex): CJK radicals, ideographs and their extensions, iteration marks.
constexpr Range kHanScript[] = {
    {0x2E80, 0x2E99},   {0x2E9B, 0x2EF3},   {0x2F00, 0x2FD5},   {0x3005, 0x3005},
    {0x3007, 0x3007},   {0x3021, 0x3029},   {0x3038, 0x303B},   {0x3400, 0x4DBF},
    {0x4E00, 0x9FFF},   {0xF900, 0xFA6D},   {0xFA70, 0xFAD9},   {0x16FE2, 0x16FE3},
    {0x16FF0, 0x16FF1}, {0x20000, 0x2A6DF}, {0x2A700, 0x2B738}, {0x2B740, 0x2B81D},
    {0x2B820, 0x2CEA1}, {0x2CEB0, 0x2EBE0}, {0x2F800, 0x2FA1D}, {0x30000, 0x3134A},
};

bool is_han(uint32_t cp) {
  return cp >= 0x2E80 && in_ranges(cp, kHanScript, std::size(kHanScript));
}

// UPPER and LOWER less the Han characters (kimi-k2's classes).
bool kimi_upper(const DecodedText& t, size_t k) {
  return o200k_upper(t, k) && !is_han(t.cps[k]);
}

bool kimi_lower(const DecodedText& t, size_t k) {
  return o200k_lower(t, k) && !is_han(t.cps[k]);
}

template <bool (*kIn)(const DecodedText&, size_t)>
size_t o200k_run(const DecodedText& t, size_t i, size_t e) {
  while (i < e && kIn(t, i)) ++i;
  return i;
}

// The letter classes of an o200k-style regex.
struct LetterClasses {
  bool (*upper)(const DecodedText&, size_t);
  bool (*lower)(const DecodedText&, size_t);
};
constexpr LetterClasses kO200kLetters{o200k_upper, o200k_lower};
constexpr LetterClasses kKimiLetters{kimi_upper, kimi_lower};

// The end of CONTRACTION? at `end` (greedy: taken when it matches).
size_t o200k_contraction(const DecodedText& t, size_t end, size_t e) {
  return end < e ? end + match_contraction(t, end, e, /*ci=*/true) : end;
}

// UPPER*LOWER+CONTRACTION? from s: the end of the match, or 0. UPPER* is
// greedy and gives back one code point at a time until LOWER+ can start (at
// a LOWER code point), so the first success is the latest such start.
// Without kContractions (tekken) the CONTRACTION? part is absent.
template <bool kContractions, const LetterClasses& kL>
size_t o200k_upper_lower(const DecodedText& t, size_t s, size_t e) {
  const size_t u_end = o200k_run<kL.upper>(t, s, e);
  for (size_t j = u_end + 1; j-- > s;) {
    if (j < e && kL.lower(t, j)) {
      const size_t end = o200k_run<kL.lower>(t, j, e);
      return kContractions ? o200k_contraction(t, end, e) : end;
    }
  }
  return 0;
}

// UPPER+LOWER*CONTRACTION? from s: the end of the match, or 0.
template <bool kContractions, const LetterClasses& kL>
size_t o200k_upper_then_lower(const DecodedText& t, size_t s, size_t e) {
  const size_t u_end = o200k_run<kL.upper>(t, s, e);
  if (u_end == s) return 0;
  const size_t end = o200k_run<kL.lower>(t, u_end, e);
  return kContractions ? o200k_contraction(t, end, e) : end;
}

// The o200k regex; tekken (Mistral's, tokenizer.ggml.pre "tekken") is the same
// without the contractions and with \p{N} (one digit) for \p{N}{1,3};
// kimi-k2 (kKimi) opens with [\p{Han}]+, takes Han out of the letter classes
// and lets only [\r\n]* (no '/') follow a run of other characters.
template <bool kContractions, size_t kMaxDigits, bool kKimi = false>
size_t match_o200k_family(const DecodedText& t, size_t i, size_t e) {
  if (kKimi && is_han(t.cps[i])) {
    size_t k = i;
    while (k < e && is_han(t.cps[k])) ++k;
    return k - i;
  }
  constexpr const LetterClasses& kL = kKimi ? kKimiLetters : kO200kLetters;
  // The two letter alternatives in order, each with the optional
  // [^\r\n\p{L}\p{N}] prefix tried first.
  const bool prefix = !has(t, i, kCpNewline | kCpLetter | kCpNumber) && i + 1 < e;
  for (auto alt :
       {o200k_upper_lower<kContractions, kL>, o200k_upper_then_lower<kContractions, kL>}) {
    if (prefix) {
      if (size_t end = alt(t, i + 1, e)) return end - i;
    }
    if (size_t end = alt(t, i, e)) return end - i;
  }
  if (has(t, i, kCpNumber)) return std::min<size_t>(run_of(t, i, e, kCpNumber) - i, kMaxDigits);
  constexpr uint8_t kNotOther = kCpLetter | kCpNumber | kCpSpace;
  const size_t k = (t.cps[i] == ' ' && i + 1 < e && !has(t, i + 1, kNotOther)) ? i + 1 : i;
  if (!has(t, k, kNotOther)) {
    size_t end = run_without(t, k, e, kNotOther);
    while (end < e && (has(t, end, kCpNewline) || (!kKimi && t.cps[end] == '/'))) ++end;
    return end - i;
  }
  // \s*[\r\n]+ : up to and including the last newline of the space run.
  const size_t k_end = run_of(t, i, e, kCpSpace);
  for (size_t p = k_end; p > i; --p) {
    if (has(t, p - 1, kCpNewline)) return p - i;
  }
  return match_space_run(t, i, e);
}

// [\p{P}\$\+<=>\^~\|`]+ (falcon) and [\p{P}\$\+<=>\^~\|]+ (default): the
// ASCII symbols Hugging Face's Punctuation pre-tokenizer also counts.
template <bool kBacktick>
size_t match_punct_run(const DecodedText& t, size_t i, size_t e) {
  auto is_punct = [&](size_t k) {
    const uint32_t c = t.cps[k];
    return has(t, k, kCpPunct) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' ||
           c == '^' || c == '~' || c == '|' || (kBacktick && c == '`');
  };
  size_t k = i;
  while (k < e && is_punct(k)) ++k;
  return k - i;
}

size_t match_one_number(const DecodedText& t, size_t i, size_t e) {
  return has(t, i, kCpNumber) ? 1 : 0;
}

size_t match_numbers(const DecodedText& t, size_t i, size_t e) {
  return run_of(t, i, e, kCpNumber) - i;
}

// [0-9][0-9][0-9]
size_t match_three_ascii_digits(const DecodedText& t, size_t i, size_t e) {
  if (i + 3 > e) return 0;
  for (size_t k = i; k < i + 3; ++k) {
    if (t.cps[k] < '0' || t.cps[k] > '9') return 0;
  }
  return 3;
}

// --- deepseek-llm -----------------------------------------------------------
// Character classes copied as code point ranges from the model's
// tokenizer.json (the cased letters of the cased scripts, ASCII / fullwidth
// punctuation, CJK).
constexpr Range kDeepseekLetters[] = {
    {0x0041, 0x005A},   {0x0061, 0x007A},   {0x00B5, 0x00B5},   {0x00C0, 0x00D6},
    {0x00D8, 0x00F6},   {0x00F8, 0x01BA},   {0x01BC, 0x01BF},   {0x01C4, 0x0293},
    {0x0295, 0x02AF},   {0x0370, 0x0373},   {0x0376, 0x0377},   {0x037B, 0x037D},
    {0x037F, 0x037F},   {0x0386, 0x0386},   {0x0388, 0x038A},   {0x038C, 0x038C},
    {0x038E, 0x03A1},   {0x03A3, 0x03F5},   {0x03F7, 0x0481},   {0x048A, 0x052F},
    {0x0531, 0x0556},   {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},
    {0x1C90, 0x1CBA},   {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},
    {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},   {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},
    {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},   {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},
    {0x1FD6, 0x1FDB},   {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},
    {0x2102, 0x2102},   {0x2107, 0x2107},   {0x210A, 0x2113},   {0x2115, 0x2115},
    {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},   {0x2128, 0x2128},
    {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},
    {0x2C7E, 0x2CE4},   {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},
    {0xA680, 0xA69B},   {0xA722, 0xA76F},   {0xA771, 0xA787},   {0xA78B, 0xA78E},
    {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},   {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
constexpr Range kDeepseekPunct[] = {
    {0x0021, 0x002F}, {0x003A, 0x007E}, {0xFF01, 0xFF0F},
    {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002},
};
constexpr Range kDeepseekCjk[] = {{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}};

template <const Range* kRanges, size_t kCount>
size_t match_optional_space_then_class_run(const DecodedText& t, size_t i, size_t e) {
  auto in_class = [&](size_t k) { return in_ranges(t.cps[k], kRanges, kCount); };
  size_t k = (has(t, i, kCpSpace) && i + 1 < e && in_class(i + 1)) ? i + 1 : i;
  if (!in_class(k)) return 0;
  while (k < e && in_class(k)) ++k;
  return k - i;
}

// \s?X+ for a class X of the code point flags (deepseek-coder's \s?\p{L}+
// and \s?\p{P}+).
template <uint8_t kClass>
size_t match_optional_space_then_flag_run(const DecodedText& t, size_t i, size_t e) {
  const size_t k = (has(t, i, kCpSpace) && i + 1 < e && has(t, i + 1, kClass)) ? i + 1 : i;
  if (!has(t, k, kClass)) return 0;
  return run_of(t, k, e, kClass) - i;
}

size_t match_newline_char(const DecodedText& t, size_t i, size_t e) {
  return has(t, i, kCpNewline) ? 1 : 0;
}

// \s+$ : a space run that reaches the end of the piece.
size_t match_trailing_space(const DecodedText& t, size_t i, size_t e) {
  if (!has(t, i, kCpSpace)) return 0;
  return run_of(t, i, e, kCpSpace) == e ? e - i : 0;
}

size_t match_cjk_run(const DecodedText& t, size_t i, size_t e) {
  size_t k = i;
  while (k < e && in_ranges(t.cps[k], kDeepseekCjk, std::size(kDeepseekCjk))) ++k;
  return k - i;
}

// [^\n]+|[\n]+
size_t match_line_or_newlines(const DecodedText& t, size_t i, size_t e) {
  const bool nl = t.cps[i] == '\n';
  size_t k = i;
  while (k < e && (t.cps[k] == '\n') == nl) ++k;
  return k - i;
}

// DeepSeek V3's pre-tokenizer (llama.cpp's deepseek3-llm regexes, also
// hunyuan-dense's), three steps:
//   \p{N}{1,3}
//   [一-龥぀-ゟ゠-ヿ]+
//   [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
//     | [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ | ?[\p{P}\p{S}]+[\r\n]*
//     | \s*[\r\n]+ | \s+(?!\S) | \s+
size_t match_numbers_upto3(const DecodedText& t, size_t i, size_t e) {
  return std::min<size_t>(run_of(t, i, e, kCpNumber) - i, 3);
}

constexpr Range kDeepseek3Cjk[] = {{0x4E00, 0x9FA5}, {0x3040, 0x309F}, {0x30A0, 0x30FF}};

size_t match_deepseek3_cjk_run(const DecodedText& t, size_t i, size_t e) {
  size_t k = i;
  while (k < e && in_ranges(t.cps[k], kDeepseek3Cjk, std::size(kDeepseek3Cjk))) ++k;
  return k - i;
}

bool is_ascii_letter(uint32_t cp) {
  return (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z');
}

bool is_ascii_punct(uint32_t cp) {
  return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
         (cp >= 0x7B && cp <= 0x7E);
}

size_t match_deepseek3_words(const DecodedText& t, size_t i, size_t e) {
  // An ASCII punctuation mark glued to the ASCII letters after it.
  if (is_ascii_punct(t.cps[i]) && i + 1 < e && is_ascii_letter(t.cps[i + 1])) {
    size_t k = i + 1;
    while (k < e && is_ascii_letter(t.cps[k])) ++k;
    return k - i;
  }
  // An optional code point that is neither \r \n, a letter, punctuation nor
  // a symbol, then letters and marks; without it when what follows is none.
  constexpr uint8_t kLetterMark = kCpLetter | kCpMark;
  if (!has(t, i, kCpNewline | kCpLetter | kCpPunct | kCpSymbol) && i + 1 < e &&
      has(t, i + 1, kLetterMark)) {
    return run_of(t, i + 1, e, kLetterMark) - i;
  }
  if (has(t, i, kLetterMark)) return run_of(t, i, e, kLetterMark) - i;
  // An optional ' ', punctuation and symbols, then any \r \n.
  constexpr uint8_t kPunctSymbol = kCpPunct | kCpSymbol;
  const size_t k = (t.cps[i] == ' ' && i + 1 < e && has(t, i + 1, kPunctSymbol)) ? i + 1 : i;
  if (has(t, k, kPunctSymbol)) {
    const size_t p = run_of(t, k, e, kPunctSymbol);
    return run_of(t, p, e, kCpNewline) - i;
  }
  if (!has(t, i, kCpSpace)) return 0;
  // \s*[\r\n]+: the space run up to its last \r or \n, if it holds one.
  const size_t run = run_of(t, i, e, kCpSpace);
  size_t last_nl = run;
  for (size_t q = i; q < run; ++q) {
    if (has(t, q, kCpNewline)) last_nl = q;
  }
  if (last_nl < run) return last_nl + 1 - i;
  return match_space_run(t, i, e);
}

struct Sequence {
  const Matcher* steps;
  size_t count;
};

constexpr Matcher kGpt2Steps[] = {match_gpt2};
constexpr Matcher kLlama3Steps[] = {match_llama3_family<3, false>};
constexpr Matcher kQwen2Steps[] = {match_llama3_family<1, false>};
constexpr Matcher kQwen35Steps[] = {match_llama3_family<1, true>};
constexpr Matcher kStarcoderSteps[] = {match_one_number, match_gpt2};
constexpr Matcher kFalconSteps[] = {match_punct_run<true>, match_gpt2, match_three_ascii_digits};
constexpr Matcher kDefaultSteps[] = {match_punct_run<false>, match_gpt2, match_numbers,
                                     match_three_ascii_digits};
constexpr Matcher kDeepseekSteps[] = {
    match_newline_char,
    match_optional_space_then_class_run<kDeepseekLetters, std::size(kDeepseekLetters)>,
    match_optional_space_then_class_run<kDeepseekPunct, std::size(kDeepseekPunct)>,
    match_trailing_space,
    match_cjk_run,
    match_numbers,
};
constexpr Matcher kDeepseek3Steps[] = {match_numbers_upto3, match_deepseek3_cjk_run,
                                       match_deepseek3_words};
constexpr Matcher kDeepseekCoderSteps[] = {
    match_newline_char,
    match_optional_space_then_flag_run<kCpLetter>,
    match_optional_space_then_flag_run<kCpPunct>,
    match_cjk_run,
    match_one_number,
};
constexpr Matcher kSeedCoderSteps[] = {match_llama3_family<1, false, false>};
constexpr Matcher kKimiK2Steps[] = {match_o200k_family<true, 3, true>};
constexpr Matcher kNewlineSteps[] = {match_line_or_newlines};
constexpr Matcher kGpt4oSteps[] = {match_o200k_family<true, 3>};
constexpr Matcher kTekkenSteps[] = {match_o200k_family<false, 1>};

Sequence sequence_for(PreTokenizer kind) {
  switch (kind) {
    case PreTokenizer::kNone:
      return {nullptr, 0};
    case PreTokenizer::kDefault:
      return {kDefaultSteps, std::size(kDefaultSteps)};
    case PreTokenizer::kGpt2:
      return {kGpt2Steps, std::size(kGpt2Steps)};
    case PreTokenizer::kLlama3:
      return {kLlama3Steps, std::size(kLlama3Steps)};
    case PreTokenizer::kQwen2:
      return {kQwen2Steps, std::size(kQwen2Steps)};
    case PreTokenizer::kQwen35:
      return {kQwen35Steps, std::size(kQwen35Steps)};
    case PreTokenizer::kStarcoder:
      return {kStarcoderSteps, std::size(kStarcoderSteps)};
    case PreTokenizer::kFalcon:
      return {kFalconSteps, std::size(kFalconSteps)};
    case PreTokenizer::kDeepseekLlm:
      return {kDeepseekSteps, std::size(kDeepseekSteps)};
    case PreTokenizer::kNewlines:
      return {kNewlineSteps, std::size(kNewlineSteps)};
    case PreTokenizer::kGpt4o:
      return {kGpt4oSteps, std::size(kGpt4oSteps)};
    case PreTokenizer::kTekken:
      return {kTekkenSteps, std::size(kTekkenSteps)};
    case PreTokenizer::kDeepseek3:
      return {kDeepseek3Steps, std::size(kDeepseek3Steps)};
    case PreTokenizer::kDeepseekCoder:
      return {kDeepseekCoderSteps, std::size(kDeepseekCoderSteps)};
    case PreTokenizer::kSeedCoder:
      return {kSeedCoderSteps, std::size(kSeedCoderSteps)};
    case PreTokenizer::kKimiK2:
      return {kKimiK2Steps, std::size(kKimiK2Steps)};
  }
  return {nullptr, 0};
}

// Splits each [begin, end) range of `in` by `match` into `out`: matches and
// the unmatched text between them both become pieces.
void split_step(const DecodedText& t, Matcher match,
                const std::vector<std::pair<size_t, size_t>>& in,
                std::vector<std::pair<size_t, size_t>>* out) {
  out->clear();
  for (const auto& [b, e] : in) {
    size_t gap = b;
    size_t i = b;
    while (i < e) {
      const size_t n = match(t, i, e);
      if (n == 0) {
        ++i;
        continue;
      }
      if (gap < i) out->emplace_back(gap, i);
      out->emplace_back(i, i + n);
      i += n;
      gap = i;
    }
    if (gap < e) out->emplace_back(gap, e);
  }
}

struct NameEntry {
  std::string_view name;
  PreTokenizerInfo info;
};

constexpr PreTokenizerInfo info(PreTokenizer kind, bool ignore_merges = false, bool add_bos = false,
                                bool clean_spaces = true) {
  return PreTokenizerInfo{kind, ignore_merges, add_bos, clean_spaces};
}

// tokenizer.ggml.pre values, the regex family they use and their defaults.
constexpr NameEntry kNames[] = {
    {"default", info(PreTokenizer::kDefault)},
    {"gpt-2", info(PreTokenizer::kGpt2)},
    {"phi-2", info(PreTokenizer::kGpt2)},
    {"mpt", info(PreTokenizer::kGpt2)},
    {"olmo", info(PreTokenizer::kGpt2)},
    {"jina-es", info(PreTokenizer::kGpt2)},
    {"jina-de", info(PreTokenizer::kGpt2)},
    {"jina-v2-es", info(PreTokenizer::kGpt2)},
    {"jina-v2-de", info(PreTokenizer::kGpt2)},
    {"llama3", info(PreTokenizer::kLlama3, true, true)},
    {"llama-v3", info(PreTokenizer::kLlama3, true, true)},
    {"llama-bpe", info(PreTokenizer::kLlama3, true, true)},
    {"falcon3", info(PreTokenizer::kLlama3, true, true)},
    {"falcon-h1", info(PreTokenizer::kLlama3, true, true)},
    {"pixtral", info(PreTokenizer::kLlama3, true, true)},
    {"lfm2", info(PreTokenizer::kLlama3, true, true)},
    {"dbrx", info(PreTokenizer::kLlama3)},
    {"smaug-bpe", info(PreTokenizer::kLlama3)},
    {"glm4", info(PreTokenizer::kLlama3, true)},  // chatglm4's regex is llama3's; no BOS
    {"qwen2", info(PreTokenizer::kQwen2, false, false, false)},
    {"deepseek-r1-qwen", info(PreTokenizer::kQwen2, false, false, false)},
    {"megrez", info(PreTokenizer::kQwen2)},
    {"stablelm2", info(PreTokenizer::kQwen2)},
    {"qwen35", info(PreTokenizer::kQwen35, false, false, false)},
    {"starcoder", info(PreTokenizer::kStarcoder)},
    {"refact", info(PreTokenizer::kStarcoder)},
    {"codeshell", info(PreTokenizer::kStarcoder)},
    {"command-r", info(PreTokenizer::kStarcoder, false, false, false)},
    {"smollm", info(PreTokenizer::kStarcoder, false, false, false)},
    {"falcon", info(PreTokenizer::kFalcon)},
    {"deepseek-llm", info(PreTokenizer::kDeepseekLlm, false, false, false)},
    {"gpt-4o", info(PreTokenizer::kGpt4o, false, false, false)},
    {"llama4", info(PreTokenizer::kGpt4o, false, false, false)},
    {"tekken", info(PreTokenizer::kTekken, true, true, false)},
    {"deepseek-v3", info(PreTokenizer::kDeepseek3, false, false, false)},
    {"hunyuan-dense", info(PreTokenizer::kDeepseek3, false, false, false)},
    {"joyai-llm", info(PreTokenizer::kDeepseek3, false, false, false)},
    {"deepseek-coder", info(PreTokenizer::kDeepseekCoder, false, false, false)},
    {"exaone", info(PreTokenizer::kStarcoder)},
    {"exaone4", info(PreTokenizer::kGpt2)},
    {"hunyuan", info(PreTokenizer::kQwen2, false, false, false)},
    {"seed-coder", info(PreTokenizer::kSeedCoder, false, false, false)},
    {"minimax-m2", info(PreTokenizer::kGpt4o, false, false, false)},
    {"kimi-k2", info(PreTokenizer::kKimiK2, false, false, false)},
};

}  // namespace

bool pre_tokenizer_from_name(std::string_view name, PreTokenizerInfo* info) {
  for (const NameEntry& entry : kNames) {
    if (entry.name == name) {
      *info = entry.info;
      return true;
    }
  }
  return false;
}

void pre_tokenize(PreTokenizer kind, std::string_view text, DecodedText* scratch,
                  std::vector<std::string_view>* pieces) {
  pieces->clear();
  if (text.empty()) return;
  const Sequence seq = sequence_for(kind);
  if (seq.count == 0) {
    pieces->push_back(text);
    return;
  }
  scratch->decode(text);
  std::vector<std::pair<size_t, size_t>> ranges{{0, scratch->size()}};
  std::vector<std::pair<size_t, size_t>> next;
  for (size_t s = 0; s < seq.count; ++s) {
    split_step(*scratch, seq.steps[s], ranges, &next);
    ranges.swap(next);
  }
  pieces->reserve(ranges.size());
  for (const auto& [b, e] : ranges) {
    const size_t ob = scratch->offs[b];
    pieces->push_back(text.substr(ob, scratch->offs[e] - ob));
  }
}

}  // namespace folio::tokenizer
