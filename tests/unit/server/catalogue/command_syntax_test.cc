#include "server/catalogue/command_syntax.h"

#include <gtest/gtest.h>

#include <set>

#include "server/catalogue/command_table.h"
#include "server/catalogue/family_registry.h"
#include "../session.h"

namespace bloomgate {
namespace {

using testing::Args;
using testing::Bulk;
using testing::Map;

// The line as redis-cli prints it: "<ON|OFF>" (a required choice) is "ON|OFF".
std::string AsPrinted(std::string_view line) {
  std::string printed;
  for (char c : line) {
    if (c != '<' && c != '>') printed += c;
  }
  return printed;
}

// The line a command's row is documented by: its own or the table's.
const CommandSyntax* RowSyntax(std::string_view name) {
  static const CommandTable table;
  const CommandSpec* spec = table.Find(name);
  return spec == nullptr ? nullptr : SyntaxOf(*spec);
}

TEST(CommandSyntax, EveryRowHasALineAndEveryLineARow) {
  CommandTable table;
  std::set<std::string_view> rows;
  for (const CommandSpec* spec : table.all()) {
    rows.insert(spec->full_name);
    EXPECT_NE(SyntaxOf(*spec), nullptr)
        << spec->full_name << " has no line in server/catalogue/command_syntax.cc "
        << "(or, a family's, in its family record)";
    // One line per command: a row's own line leaves none to the table.
    if (spec->syntax != nullptr) {
      EXPECT_EQ(FindCommandSyntax(spec->full_name), nullptr)
          << spec->full_name << " has its own line and one in command_syntax.cc";
    }
  }
  for (const CommandSyntax& syntax : CommandSyntaxTable()) {
    EXPECT_TRUE(rows.count(syntax.command))
        << "command_syntax.cc has a line for " << syntax.command << ", which is no command";
  }
  // A family's lines are its rows': each one given to the row of its name.
  for (const FilterFamily* family : RegisteredFamilies()) {
    for (const CommandSyntax& line : family->syntax) {
      const CommandSpec* spec = table.Find(line.command);
      ASSERT_NE(spec, nullptr) << family->type_name << " has a line for " << line.command
                               << ", which is no command";
      EXPECT_EQ(spec->syntax, &line) << line.command << " is not the row of that line";
      EXPECT_EQ(spec->group, family->group) << line.command << " is another family's row";
    }
  }
}

TEST(CommandSyntax, EveryLineParsesAndPrintsBackAsWritten) {
  std::vector<CommandSyntax> lines = CommandSyntaxTable();
  CommandTable table;
  for (const CommandSpec* spec : table.all()) {
    if (spec->syntax != nullptr) lines.push_back(*spec->syntax);
  }
  for (const CommandSyntax& syntax : lines) {
    std::vector<CommandArgument> args;
    std::string error;
    ASSERT_TRUE(ParseCommandSyntax(syntax, /*key_specs=*/1, &args, &error))
        << syntax.command << ": " << error;
    EXPECT_EQ(RenderArguments(args), AsPrinted(syntax.line)) << syntax.command;
  }
}

TEST(CommandSyntax, BfReserveHasRedisBloomsArguments) {
  std::vector<CommandArgument> args;
  std::string error;
  ASSERT_TRUE(ParseCommandSyntax(*RowSyntax("bf.reserve"), 1, &args, &error)) << error;
  // RedisBloom's five, then ours: [WINDOW seconds [GENERATIONS generations]]
  // and [SEED seed].
  ASSERT_EQ(args.size(), 7u);
  EXPECT_EQ(args[0].name, "key");
  EXPECT_EQ(args[0].type, ArgType::kKey);
  EXPECT_EQ(args[0].key_spec_index, 0);
  EXPECT_EQ(args[1].type, ArgType::kDouble);
  EXPECT_EQ(args[2].type, ArgType::kInteger);
  EXPECT_EQ(args[3].name, "expansion");
  EXPECT_EQ(args[3].token, "EXPANSION");
  EXPECT_TRUE(args[3].optional);
  EXPECT_EQ(args[4].type, ArgType::kPureToken);
  EXPECT_EQ(args[4].name, "nonscaling");
  EXPECT_EQ(args[4].token, "NONSCALING");
  EXPECT_EQ(args[5].type, ArgType::kBlock);
  EXPECT_TRUE(args[5].optional);
}

TEST(CommandSyntax, RepetitionsChoicesAndBlocks) {
  std::vector<CommandArgument> args;
  std::string error;
  ASSERT_TRUE(ParseCommandSyntax({"x", "key item increment [item increment ...] "
                                       "[W w [w ...]] [T t [T t ...]] [A|B c] <ON|OFF>", ""},
                                 1, &args, &error)) << error;
  ASSERT_EQ(args.size(), 6u);
  EXPECT_EQ(args[1].type, ArgType::kBlock);
  EXPECT_TRUE(args[1].multiple);
  EXPECT_EQ(args[1].children.size(), 2u);
  EXPECT_TRUE(args[2].multiple);
  EXPECT_FALSE(args[2].multiple_token);
  EXPECT_EQ(args[2].token, "W");
  EXPECT_TRUE(args[3].multiple_token);
  EXPECT_EQ(args[4].type, ArgType::kOneOf);
  EXPECT_TRUE(args[4].optional);
  EXPECT_EQ(args[4].children[1].type, ArgType::kString);
  EXPECT_EQ(args[4].children[1].token, "B");
  EXPECT_EQ(args[5].type, ArgType::kOneOf);
  EXPECT_FALSE(args[5].optional);
}

TEST(CommandSyntax, KeysAfterACountGetTheSecondKeySpec) {
  std::vector<CommandArgument> args;
  std::string error;
  ASSERT_TRUE(ParseCommandSyntax(*RowSyntax("cms.merge"), 2, &args, &error)) << error;
  EXPECT_EQ(args[0].key_spec_index, 0);
  EXPECT_EQ(args[1].key_spec_index, -1);
  EXPECT_EQ(args[2].key_spec_index, 1);
}

TEST(CommandSyntax, MalformedLinesAreRefused) {
  for (const CommandSyntax& bad : std::vector<CommandSyntax>{
           {"x", "key [item", ""}, {"x", "key item]", ""}, {"x", "key ...", ""},
           {"x", "key [other ...]", ""}, {"x", "key [a|]", ""},
           {"x", "key count", "count:number"}, {"x", "key", "missing:integer"}}) {
    std::vector<CommandArgument> args;
    std::string error;
    EXPECT_FALSE(ParseCommandSyntax(bad, 1, &args, &error)) << bad.line;
    EXPECT_FALSE(error.empty()) << bad.line;
  }
}

// COMMAND DOCS carries the arguments, as a map per argument in RESP3.
TEST(CommandSyntax, CommandDocsRepliesWithTheArguments) {
  auto server = testing::MakeServer();
  testing::Session session(server.get());
  const std::string resp2 = session.Run({"COMMAND", "DOCS", "bf.card"});
  EXPECT_EQ(resp2, "*2\r\n" + Bulk("bf.card") + "*8\r\n" + Bulk("summary") +
                       Bulk("Returns the cardinality of a Bloom filter") + Bulk("since") +
                       Bulk("2.4.4") + Bulk("group") + Bulk("module") + Bulk("arguments") +
                       "*1\r\n*8\r\n" + Bulk("name") + Bulk("key") + Bulk("type") + Bulk("key") +
                       Bulk("key_spec_index") + ":0\r\n" + Bulk("display_text") + Bulk("key"));
  session.set_resp3(true);
  const std::string resp3 = session.Run({"COMMAND", "DOCS", "bf.reserve"});
  EXPECT_NE(resp3.find(Bulk("flags") + "~1\r\n+optional\r\n"), std::string::npos) << resp3;
  EXPECT_NE(resp3.find(Bulk("token") + Bulk("NONSCALING")), std::string::npos) << resp3;
  EXPECT_EQ(resp3.rfind(Map(1), 0), 0u) << resp3;
}

}  // namespace
}  // namespace bloomgate
