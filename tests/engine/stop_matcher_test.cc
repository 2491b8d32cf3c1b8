#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace folio {
namespace stop_matcher_test {

struct Fed {
  std::vector<std::string> emitted;  // what each feed released
  std::string text;                  // everything released, flush included
  bool stopped = false;
  int32_t stop_index = -1;
};

// Feeds the pieces in order, stops feeding at a stop, flushes otherwise.
Fed feed_all(std::vector<std::string> stops, const std::vector<std::string>& pieces) {
  StopMatcher m(std::move(stops));
  Fed r;
  for (const std::string& p : pieces) {
    StopMatcher::Step s = m.feed(p);
    r.emitted.push_back(s.text);
    r.text += s.text;
    if (s.stopped) {
      r.stopped = true;
      r.stop_index = s.stop_index;
      break;
    }
  }
  if (!r.stopped) r.text += m.flush();
  return r;
}

// Every split of `text` into pieces at byte boundaries `cuts` (bit i = cut
// after byte i) gives the same result.
void expect_split_independent(const std::vector<std::string>& stops, const std::string& text,
                              const std::string& want_text, int32_t want_index) {
  ASSERT_LT(text.size(), 16u);
  const uint32_t n_masks = 1u << (text.size() - 1);
  for (uint32_t mask = 0; mask < n_masks; ++mask) {
    std::vector<std::string> pieces(1);
    for (size_t i = 0; i < text.size(); ++i) {
      pieces.back() += text[i];
      if (i + 1 < text.size() && (mask >> i) & 1u) pieces.emplace_back();
    }
    const Fed r = feed_all(stops, pieces);
    ASSERT_EQ(r.text, want_text) << "mask " << mask;
    ASSERT_EQ(r.stopped, want_index >= 0) << "mask " << mask;
    ASSERT_EQ(r.stop_index, want_index) << "mask " << mask;
  }
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m;
  EXPECT_EQ(m.feed("hello ").text, "hello ");
  EXPECT_EQ(m.feed("world").text, "world");
  EXPECT_EQ(m.held_bytes(), 0u);
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, StopInsideOnePiece) {
  const Fed r = feed_all({"END"}, {"abc", "xyENDzz", "more"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.stop_index, 0);
  EXPECT_EQ(r.text, "abcxy");
  EXPECT_EQ(r.emitted.size(), 2u);  // nothing fed after the stop
}

TEST(StopMatcher, StopSplitOverThreePieces) {
  // "<|im_end|>" arrives as "<|", "im_", "end|>": nothing of it is released.
  StopMatcher m({"<|im_end|>"});
  auto s1 = m.feed("Hi there<|");
  EXPECT_EQ(s1.text, "Hi there");
  EXPECT_FALSE(s1.stopped);
  EXPECT_EQ(m.held_bytes(), 2u);
  auto s2 = m.feed("im_");
  EXPECT_EQ(s2.text, "");
  EXPECT_EQ(m.held_bytes(), 5u);
  auto s3 = m.feed("end|>trailing");
  EXPECT_TRUE(s3.stopped);
  EXPECT_EQ(s3.text, "");
  EXPECT_EQ(s3.stop_index, 0);
  // Later pieces are ignored.
  auto s4 = m.feed("x");
  EXPECT_TRUE(s4.stopped);
  EXPECT_EQ(s4.text, "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, PartialMatchThatFailsIsReleased) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.feed("go ST").text, "go ");
  EXPECT_EQ(m.feed("O").text, "");
  auto s = m.feed("RM");  // "STORM": not a stop
  EXPECT_FALSE(s.stopped);
  EXPECT_EQ(s.text, "STORM");
  EXPECT_EQ(m.held_bytes(), 0u);
  // A held prefix at the end of generation comes out on flush.
  EXPECT_EQ(m.feed(" ST").text, " ");
  EXPECT_EQ(m.flush(), "ST");
}

TEST(StopMatcher, FailedPartialCanHideTheRealStart) {
  // "aab" with stop "ab": the first "a" is held, released when the second
  // arrives (which is held in turn); then "b" completes the stop.
  const Fed r = feed_all({"ab"}, {"a", "a", "b"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "a");
  EXPECT_EQ(r.emitted, (std::vector<std::string>{"", "a", ""}));
}

TEST(StopMatcher, OverlappingPrefixes) {
  // Self-overlapping stop: "abab" inside "ababab..." and "aabab".
  expect_split_independent({"abab"}, "xabaabab!", "xaba", 0);
  expect_split_independent({"aaa"}, "baabaaac", "baab", 0);
  // The text ends inside a partial match: all of it comes back on flush.
  expect_split_independent({"abab"}, "abaaba", "abaaba", -1);
}

TEST(StopMatcher, MultipleStopsEarliestCompletionWins) {
  // "b" completes before "abc" does.
  expect_split_independent({"abc", "b"}, "xabcx", "xa", 1);
  // Two stops complete on the same byte: the longer (earlier start) wins.
  expect_split_independent({"c", "abc"}, "xabcx", "x", 1);
  // Only one of them occurs.
  expect_split_independent({"###", "\n\n"}, "a\nb\n\nc", "a\nb", 1);
  expect_split_independent({"###", "\n\n"}, "a##b###", "a##b", 0);
  // Neither occurs.
  expect_split_independent({"###", "\n\n"}, "a##b\n#", "a##b\n#", -1);
}

TEST(StopMatcher, HoldsOnlyWhatCouldStillMatch) {
  StopMatcher m({"</s>", "User:"});
  EXPECT_EQ(m.feed("Hello U").text, "Hello ");
  EXPECT_EQ(m.held_bytes(), 1u);
  EXPECT_EQ(m.feed("se").text, "");
  EXPECT_EQ(m.held_bytes(), 3u);
  EXPECT_EQ(m.feed("d <").text, "Used ");  // "<" could start "</s>"
  EXPECT_EQ(m.held_bytes(), 1u);
  auto s = m.feed("/s>");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.stop_index, 0);
  EXPECT_EQ(s.text, "");
}

TEST(StopMatcher, Utf8MultiByte) {
  // Stop "世界" (6 bytes) split inside characters and across pieces.
  const std::string stop = "世界";
  expect_split_independent({stop}, "你好世界!", "你好", 0);
  // A shared first character that turns out not to be the stop.
  StopMatcher m({stop});
  EXPECT_EQ(m.feed("你好").text, "你好");
  EXPECT_EQ(m.feed("世").text, "");  // could be the start of 世界
  EXPECT_EQ(m.feed("人").text, "世人");
  // Whole characters in, whole characters out: a released piece never ends
  // inside a character.
  StopMatcher e({"éa"});
  EXPECT_EQ(e.feed("café").text, "caf");
  EXPECT_EQ(e.feed("é").text, "é");  // "éé": the first é can no longer start "éa"
  auto s = e.feed("a");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.text, "");
}

TEST(StopMatcher, EmptyStopStringsAreIgnored) {
  StopMatcher m({"", "x"});
  EXPECT_EQ(m.feed("abc").text, "abc");
  auto s = m.feed("dxe");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.stop_index, 1);
  EXPECT_EQ(s.text, "d");
}

TEST(StopMatcher, StopAtTheVeryStart) {
  const Fed r = feed_all({"Q:"}, {"Q", ":", " next"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "");
}

}  // namespace
}  // namespace folio
