// Value and Array: constructor typing, conversions, typed access, equality.
#include "gguf/value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace folio::gguf {
namespace value_test {

TEST(GgufValue, ConstructorsPickTheGgufType) {
  EXPECT_EQ(Value(5).type(), ValueType::kI32);
  EXPECT_EQ(Value(5u).type(), ValueType::kU32);
  EXPECT_EQ(Value(uint64_t{5}).type(), ValueType::kU64);
  EXPECT_EQ(Value(int64_t{5}).type(), ValueType::kI64);
  EXPECT_EQ(Value(uint8_t{5}).type(), ValueType::kU8);
  EXPECT_EQ(Value(int8_t{5}).type(), ValueType::kI8);
  EXPECT_EQ(Value(uint16_t{5}).type(), ValueType::kU16);
  EXPECT_EQ(Value(int16_t{5}).type(), ValueType::kI16);
  EXPECT_EQ(Value(1.0f).type(), ValueType::kF32);
  EXPECT_EQ(Value(1.0).type(), ValueType::kF64);
  EXPECT_EQ(Value(true).type(), ValueType::kBool);
  EXPECT_EQ(Value("x").type(), ValueType::kString);
  EXPECT_EQ(Value(std::string_view("x")).type(), ValueType::kString);
  EXPECT_EQ(Value(Array()).type(), ValueType::kArray);
  // Storage index equals the GGUF id.
  for (uint32_t id = 0; id < kValueTypeCount; ++id) {
    EXPECT_EQ(static_cast<uint32_t>(Array(static_cast<ValueType>(id)).elem_type()), id);
  }
  EXPECT_FALSE(value_type_from_id(13).has_value());
  EXPECT_EQ(*value_type_from_id(12), ValueType::kF64);
  EXPECT_STREQ(value_type_name(ValueType::kString), "string");
}

TEST(GgufValue, IntegerConversions) {
  EXPECT_EQ(*Value(-3).to_i64(), -3);
  EXPECT_FALSE(Value(-3).to_u64().has_value());
  EXPECT_EQ(*Value(std::numeric_limits<uint64_t>::max()).to_u64(),
            std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(Value(std::numeric_limits<uint64_t>::max()).to_i64().has_value());
  EXPECT_FALSE(Value(true).to_i64().has_value());  // bool is not an integer type
  EXPECT_FALSE(Value(1.0f).to_i64().has_value());
  EXPECT_EQ(*Value(0.5f).to_f64(), 0.5);
  EXPECT_FALSE(Value(1).to_f64().has_value());
}

TEST(GgufValue, ArrayTypedAccess) {
  Array a = Array::of(std::vector<int32_t>{3, -1});
  EXPECT_EQ(a.elem_type(), ValueType::kI32);
  EXPECT_EQ(a.size(), 2u);
  ASSERT_NE(a.get_if<int32_t>(), nullptr);
  EXPECT_EQ(a.get_if<uint32_t>(), nullptr);
  EXPECT_EQ(a.bools(), nullptr);
  EXPECT_EQ(*a.int_at(1), -1);
  EXPECT_FALSE(a.int_at(2).has_value());
  EXPECT_EQ(a.at(0), Value(3));

  Array b = Array::of_bools({true, false});
  EXPECT_EQ(b.elem_type(), ValueType::kBool);
  EXPECT_EQ(b.get_if<uint8_t>(), nullptr);  // bools are not u8
  ASSERT_NE(b.bools(), nullptr);
  EXPECT_EQ(*b.bools(), (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(b.at(0), Value(true));
  EXPECT_FALSE(b.int_at(0).has_value());

  Array u = Array::of(std::vector<uint8_t>{1, 0});
  EXPECT_FALSE(u == b);  // same bytes, different element type

  Array s = Array::of_strings({"a"});
  EXPECT_EQ(s.at(0), Value("a"));
  EXPECT_EQ(s.depth(), 1);
  Array n = Array::of(std::vector<Array>{s, Array::of(std::vector<Array>{s})});
  EXPECT_EQ(n.depth(), 3);
  EXPECT_EQ(n.at(0), Value(s));
}

TEST(GgufValue, EqualityIsBitwiseForFloats) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(Value(nan) == Value(nan));
  EXPECT_FALSE(Value(0.0f) == Value(-0.0f));
  EXPECT_FALSE(Value(1.0f) == Value(1.0));  // f32 vs f64
  EXPECT_FALSE(Value(1) == Value(1u));
  EXPECT_TRUE(Array::of(std::vector<double>{nan}) == Array::of(std::vector<double>{nan}));
  EXPECT_FALSE(Array::of(std::vector<float>{0.0f}) == Array::of(std::vector<float>{-0.0f}));
  EXPECT_TRUE(Array(ValueType::kString) == Array::of_strings({}));
  EXPECT_FALSE(Array(ValueType::kString) == Array(ValueType::kU8));
}

}  // namespace
}  // namespace folio::gguf
