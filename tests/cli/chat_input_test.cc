#include "chat_input.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace folio::tools {
namespace chat_input_test {

// Feeds lines; returns the inputs completed, in order.
std::vector<InputAssembler::Input> feed(InputAssembler& a, const std::vector<std::string>& lines) {
  std::vector<InputAssembler::Input> got;
  for (const std::string& l : lines) {
    InputAssembler::Input in;
    if (a.add_line(l, &in)) got.push_back(in);
  }
  return got;
}

TEST(ChatInput, OneLineIsOneInput) {
  InputAssembler a;
  auto got = feed(a, {"hello there", ""});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].text, "hello there");
  EXPECT_FALSE(got[0].multi_line);
  EXPECT_EQ(got[1].text, "");
  EXPECT_FALSE(a.pending());
}

TEST(ChatInput, BackslashContinues) {
  InputAssembler a;
  InputAssembler::Input in;
  EXPECT_FALSE(a.add_line("first \\", &in));
  EXPECT_TRUE(a.pending());
  EXPECT_FALSE(a.in_block());
  EXPECT_FALSE(a.add_line("second\\", &in));
  EXPECT_TRUE(a.add_line("third", &in));
  EXPECT_EQ(in.text, "first \nsecond\nthird");
  EXPECT_TRUE(in.multi_line);
  EXPECT_FALSE(a.pending());
}

TEST(ChatInput, BlockBetweenTripleQuotes) {
  InputAssembler a;
  auto got = feed(a, {R"(""")", "/not a command", "", "ends with \\", R"(  """  )", "after"});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].text, "/not a command\n\nends with \\");
  EXPECT_TRUE(got[0].multi_line);
  EXPECT_EQ(got[1].text, "after");
}

TEST(ChatInput, BlockStartingWithEmptyLineKeepsIt) {
  InputAssembler a;
  auto got = feed(a, {R"(""")", "", "x", R"(""")"});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].text, "\nx");
}

TEST(ChatInput, TripleQuotesInsideContinuationAreText) {
  InputAssembler a;
  auto got = feed(a, {"a\\", R"(""")"});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].text, "a\n\"\"\"");
}

TEST(ChatInput, ClearDropsPartialInput) {
  InputAssembler a;
  InputAssembler::Input in;
  EXPECT_FALSE(a.add_line(R"(""")", &in));
  EXPECT_FALSE(a.add_line("half", &in));
  EXPECT_TRUE(a.in_block());
  a.clear();
  EXPECT_FALSE(a.pending());
  ASSERT_TRUE(a.add_line("fresh", &in));
  EXPECT_EQ(in.text, "fresh");
}

TEST(ChatInput, CarriageReturnsAreDropped) {
  InputAssembler a;
  InputAssembler::Input in;
  EXPECT_FALSE(a.add_line("a\\\r", &in));
  ASSERT_TRUE(a.add_line("b\r", &in));
  EXPECT_EQ(in.text, "a\nb");
}

ParsedInput parse(const std::string& text, bool multi_line = false) {
  return parse_chat_input({text, multi_line});
}

TEST(ChatInput, Commands) {
  EXPECT_EQ(parse("/help").command, ChatCommand::kHelp);
  EXPECT_EQ(parse("/?").command, ChatCommand::kHelp);
  EXPECT_EQ(parse("/reset").command, ChatCommand::kReset);
  EXPECT_EQ(parse("/exit").command, ChatCommand::kExit);
  EXPECT_EQ(parse("/quit  ").command, ChatCommand::kExit);
  EXPECT_EQ(parse("").command, ChatCommand::kEmpty);
  EXPECT_EQ(parse("   ").command, ChatCommand::kEmpty);
}

TEST(ChatInput, UnknownCommandIsNotText) {
  ParsedInput p = parse("/frobnicate the thing");
  EXPECT_EQ(p.command, ChatCommand::kUnknown);
  EXPECT_EQ(p.text, "/frobnicate");
  EXPECT_EQ(parse("/").command, ChatCommand::kUnknown);
}

TEST(ChatInput, CommandWithArgumentsIsRefused) {
  ParsedInput p = parse("/reset now");
  EXPECT_EQ(p.command, ChatCommand::kBadArguments);
  EXPECT_EQ(p.text, "/reset");
}

TEST(ChatInput, DoubleSlashSendsText) {
  ParsedInput p = parse("//help me");
  EXPECT_EQ(p.command, ChatCommand::kText);
  EXPECT_EQ(p.text, "/help me");
}

TEST(ChatInput, TextAndMultiLineAreSentAsIs) {
  ParsedInput p = parse("  hi /help ");
  EXPECT_EQ(p.command, ChatCommand::kText);
  EXPECT_EQ(p.text, "  hi /help ");
  p = parse("/help\nmore", /*multi_line=*/true);
  EXPECT_EQ(p.command, ChatCommand::kText);
  EXPECT_EQ(p.text, "/help\nmore");
}

TEST(ChatInput, HelpNamesEveryCommand) {
  const std::string help = chat_help_text();
  for (const char* c : {"/help", "/reset", "/exit", "/quit", "//", "\"\"\"", "Ctrl-C", "Ctrl-D"}) {
    EXPECT_NE(help.find(c), std::string::npos) << c;
  }
}

}  // namespace
}  // namespace folio::tools
