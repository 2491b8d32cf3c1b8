#include "core/status.h"

#include <gtest/gtest.h>

namespace folio {
namespace status_test {

Result<int> parse_positive(int v) {
  if (v <= 0) return invalid_argument("value {} is not positive", v);
  return v;
}

Result<int> twice(int v) {
  FOLIO_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

TEST(Status, OkAndError) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  Status e = not_found("tensor '{}'", "blk.0.attn_q.weight");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.code(), StatusCode::kNotFound);
  EXPECT_EQ(e.to_string(), "NOT_FOUND: tensor 'blk.0.attn_q.weight'");
  EXPECT_EQ(e.with_context("loading m.gguf").message(), "loading m.gguf: tensor 'blk.0.attn_q.weight'");
}

TEST(Result, PropagatesErrors) {
  auto r = twice(4);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 8);
  auto bad = twice(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("-1"), std::string::npos);
}

TEST(Result, OkStatusIsNotAValue) {
  Result<int> r{Status()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace folio
