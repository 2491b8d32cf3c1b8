// TextStream's kept-token count on the tiny llama vocabulary: a stop string
// that starts inside a token keeps that token and drops the ones after it;
// one that starts on a token's first byte drops that token; text held back
// and then released keeps its tokens; an end without a stop keeps every
// token (empty-text ones too); tokens that split a character count with
// the character.
#include "engine/text_stream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace folio {
namespace text_stream_test {

const std::string kModel = std::string(FOLIO_REFDATA_DIR) + "/models/tiny-llama-f32.gguf";

class TextStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = tokenizer::Tokenizer::open(kModel);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    tok_ = std::make_unique<tokenizer::Tokenizer>(std::move(t).value());
    // A token of three lowercase letters, to cut inside it.
    for (int32_t id = 0; id < tok_->vocab().size() && word_ < 0; ++id) {
      const std::string p = tok_->piece(id);
      bool letters = p.size() == 3;
      for (char c : p) letters = letters && c >= 'a' && c <= 'z';
      if (letters) word_ = id;
    }
    ASSERT_GE(word_, 0) << "no three-letter token in the vocabulary";
    word_text_ = tok_->piece(word_);
  }

  // The token whose text is exactly `piece` (a letter, a byte, ...).
  int32_t id_of(const std::string& piece) {
    for (int32_t id = 0; id < tok_->vocab().size(); ++id) {
      if (tok_->piece(id) == piece) return id;
    }
    ADD_FAILURE() << "no token for piece '" << piece << "'";
    return 0;
  }

  struct Run {
    std::string text;
    std::vector<int64_t> kept;  // kept_tokens() after each push
    bool stopped = false;
    int64_t n_tokens = 0;
    int64_t kept_at_end = 0;
  };

  // Pushes `ids` until a stop, then finishes when no stop matched.
  Run run(const std::vector<std::string>& stops, const std::vector<int32_t>& ids) {
    TextStream s(tok_.get(), /*render_special=*/false, stops);
    Run r;
    for (int32_t id : ids) {
      StopMatcher::Step step = s.push(id);
      r.text += step.text;
      r.kept.push_back(s.kept_tokens());
      if (step.stopped) {
        r.stopped = true;
        break;
      }
    }
    if (!r.stopped) r.text += s.finish(&r.stopped);
    r.n_tokens = s.n_tokens();
    r.kept_at_end = s.kept_tokens();
    return r;
  }

  std::unique_ptr<tokenizer::Tokenizer> tok_;
  int32_t word_ = -1;
  std::string word_text_;
};

TEST_F(TextStreamTest, StopInsideATokenKeepsIt) {
  // "Q" + word + "Z": the stop begins at the word's second letter.
  const std::string stop = word_text_.substr(1) + "Z";
  const Run r = run({stop}, {id_of("Q"), word_, id_of("Z"), id_of("K")});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, std::string("Q") + word_text_.substr(0, 1));
  EXPECT_EQ(r.n_tokens, 3);     // "K" never came: the stop matched at "Z"
  EXPECT_EQ(r.kept_at_end, 2);  // "Q" and the word, whose text straddles the cut
  EXPECT_EQ(r.kept, (std::vector<int64_t>{1, 2, 2}));
}

TEST_F(TextStreamTest, StopOnATokensFirstByteDropsIt) {
  const Run r = run({word_text_ + "Z"}, {id_of("Q"), word_, id_of("Z")});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "Q");
  EXPECT_EQ(r.n_tokens, 3);
  EXPECT_EQ(r.kept_at_end, 1);
  // While the word is held back it is not known to be kept.
  EXPECT_EQ(r.kept, (std::vector<int64_t>{1, 1, 1}));
}

TEST_F(TextStreamTest, HeldTextReleasedKeepsItsTokens) {
  // The word and "Z" look like the start of the stop until "K" decides.
  const Run r = run({word_text_ + "ZX"}, {id_of("Q"), word_, id_of("Z"), id_of("K")});
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.text, std::string("Q") + word_text_ + "ZK");
  EXPECT_EQ(r.kept, (std::vector<int64_t>{1, 1, 1, 4}));
  EXPECT_EQ(r.kept_at_end, 4);
}

TEST_F(TextStreamTest, EndWithoutStopKeepsEveryToken) {
  const int32_t eos = tok_->vocab().eos();
  ASSERT_GE(eos, 0);
  ASSERT_TRUE(tok_->piece(eos, /*render_special=*/false).empty());
  // A held-back tail and an empty-text token at the end (ignore_eos).
  const Run r = run({word_text_ + "Z"}, {id_of("Q"), word_, eos});
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.text, std::string("Q") + word_text_);
  EXPECT_EQ(r.kept, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(r.n_tokens, 3);
  EXPECT_EQ(r.kept_at_end, 3);
  // No stop strings at all.
  const Run plain = run({}, {id_of("Q"), eos, word_});
  EXPECT_EQ(plain.kept_at_end, 3);
}

TEST_F(TextStreamTest, EmptyTextTokenAtTheCutIsDropped) {
  const int32_t eos = tok_->vocab().eos();
  const Run r = run({"ZK"}, {id_of("Q"), eos, id_of("Z"), id_of("K")});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "Q");
  EXPECT_EQ(r.n_tokens, 4);
  EXPECT_EQ(r.kept_at_end, 1);  // the empty token sits at the cut: nothing of it is output
}

TEST_F(TextStreamTest, TokensSplittingACharacterCountWithIt) {
  // U+4E16 is E4 B8 96: three byte tokens, the character complete at the last.
  const std::vector<int32_t> bytes = {id_of("\xE4"), id_of("\xB8"), id_of("\x96")};
  std::vector<int32_t> ids = {id_of("Q")};
  ids.insert(ids.end(), bytes.begin(), bytes.end());
  ids.push_back(id_of("Z"));
  // The stop is the character: all three byte tokens lie at the cut.
  Run r = run({"\xE4\xB8\x96"}, ids);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "Q");
  EXPECT_EQ(r.n_tokens, 4);
  EXPECT_EQ(r.kept_at_end, 1);
  // The stop follows the character: its three tokens are kept, once released.
  r = run({"Z"}, ids);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "Q\xE4\xB8\x96");
  EXPECT_EQ(r.kept, (std::vector<int64_t>{1, 1, 1, 4, 4}));
  EXPECT_EQ(r.kept_at_end, 4);
}

}  // namespace
}  // namespace folio
