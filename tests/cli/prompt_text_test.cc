#include "prompt_text.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace folio::tools {
namespace prompt_text_test {

TEST(ProcessEscapes, NamedHexAndUnknown) {
  EXPECT_EQ(process_escapes(R"(a\nb\tc\\d\"e\'f)"), "a\nb\tc\\d\"e'f");
  EXPECT_EQ(process_escapes(R"(\x41\x4a\x7)"), "AJ\x07");
  EXPECT_EQ(process_escapes(R"(\xZ)"), "\\xZ");   // no hex digit: kept
  EXPECT_EQ(process_escapes(R"(\q)"), "\\q");     // unknown: kept
  EXPECT_EQ(process_escapes("end\\"), "end\\");   // trailing backslash: kept
  EXPECT_EQ(process_escapes(R"(\0)"), std::string(1, '\0'));
  EXPECT_EQ(process_escapes("plain"), "plain");
}

TEST(ReadTextFile, WholeFileOrAClearError) {
  const std::string path = ::testing::TempDir() + "/prompt_text_test.txt";
  {
    std::ofstream out(path, std::ios::binary);
    out << "line one\nline \\n two\n";
  }
  Result<std::string> text = read_text_file(path);
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  EXPECT_EQ(*text, "line one\nline \\n two\n");  // verbatim: no escape processing
  std::remove(path.c_str());
  Result<std::string> missing = read_text_file(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(path), std::string::npos);
}

}  // namespace
}  // namespace folio::tools
