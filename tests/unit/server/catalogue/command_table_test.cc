#include "server/catalogue/command_table.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace bloomgate {
namespace {

const CommandTable& Table() {
  static const CommandTable table;
  return table;
}

const CommandSpec& Row(std::string_view name) {
  const CommandSpec* spec = Table().Find(name);
  EXPECT_NE(spec, nullptr) << name;
  return *spec;
}

const CommandSpec& SubRow(std::string_view container, std::string_view name) {
  const CommandSpec* spec = CommandTable::FindSubcommand(Row(container), name);
  EXPECT_NE(spec, nullptr) << container << " " << name;
  return *spec;
}

std::vector<size_t> Keys(const CommandSpec& spec, size_t argc) {
  std::vector<size_t> out = {999};  // KeyIndices must clear what it is given
  CommandTable::KeyIndices(spec, argc, &out);
  return out;
}

// The rows a test walks over: every top-level row and every subcommand row.
const std::vector<const CommandSpec*>& EveryRow() { return Table().all(); }

TEST(CommandTable, AllListsEveryRowOnceWithDenseIds) {
  size_t expected = 0;
  for (const CommandSpec& spec : Table().commands()) expected += 1 + spec.subcommands.size();
  ASSERT_EQ(EveryRow().size(), expected);
  for (size_t i = 0; i < EveryRow().size(); ++i) {
    EXPECT_EQ(EveryRow()[i]->id, i) << EveryRow()[i]->full_name;
  }
}

TEST(CommandTable, FindsEveryRowByItsNameInAnyCaseAndNothingElse) {
  CommandTable table;
  for (const CommandSpec& spec : table.commands()) {
    std::string upper = spec.full_name, mixed = spec.full_name;
    for (size_t i = 0; i < upper.size(); ++i) {
      upper[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(upper[i])));
      if (i % 2 == 0) mixed[i] = upper[i];
    }
    EXPECT_EQ(table.Find(spec.full_name), &spec) << spec.full_name;
    EXPECT_EQ(table.Find(upper), &spec) << upper;
    EXPECT_EQ(table.Find(mixed), &spec) << mixed;
    // Near misses: a byte more, a byte less, the last byte changed.
    EXPECT_EQ(table.Find(spec.full_name + "x"), nullptr) << spec.full_name;
    const std::string shorter = spec.full_name.substr(0, spec.full_name.size() - 1);
    const CommandSpec* found = table.Find(shorter);
    EXPECT_TRUE(found == nullptr || found->full_name == shorter) << shorter;
    std::string changed = spec.full_name;
    changed.back() = changed.back() == '~' ? '!' : '~';
    EXPECT_EQ(table.Find(changed), nullptr) << changed;
  }
  EXPECT_EQ(table.Find(""), nullptr);
  // Case folding is ASCII letters only: '[' (0x5b) is not '{' (0x7b).
  EXPECT_EQ(table.Find("PING["), nullptr);
}

TEST(CommandTable, NamesAreLowerCaseAndFullNamesAreUnique) {
  std::set<std::string> seen;
  for (const CommandSpec* spec : EveryRow()) {
    EXPECT_FALSE(spec->name.empty());
    EXPECT_EQ(AsciiLower(spec->name), spec->name) << spec->full_name;
    EXPECT_EQ(spec->name.find_first_of(" |"), std::string_view::npos) << spec->full_name;
    EXPECT_TRUE(seen.insert(spec->full_name).second) << "duplicate " << spec->full_name;
  }
}

TEST(CommandTable, SubcommandsKnowTheirContainer) {
  for (const CommandSpec& spec : Table().commands()) {
    EXPECT_EQ(spec.parent, nullptr) << spec.full_name;
    EXPECT_EQ(spec.full_name, spec.name);
    std::set<std::string_view> names;
    for (const CommandSpec& sub : spec.subcommands) {
      EXPECT_EQ(sub.parent, &spec) << sub.full_name;
      EXPECT_EQ(sub.full_name, std::string(spec.name) + "|" + std::string(sub.name));
      EXPECT_TRUE(sub.subcommands.empty()) << sub.full_name << ": only one level of nesting";
      EXPECT_TRUE(names.insert(sub.name).second) << "duplicate " << sub.full_name;
    }
  }
}

TEST(CommandTable, EveryRowHasAHandlerOrSubcommands) {
  for (const CommandSpec* spec : EveryRow()) {
    EXPECT_TRUE(spec->handler != nullptr || !spec->subcommands.empty()) << spec->full_name;
  }
}

TEST(CommandTable, ArityIsNeverZeroAndFitsTheMaximum) {
  for (const CommandSpec* spec : EveryRow()) {
    EXPECT_NE(spec->arity, 0) << spec->full_name;
    EXPECT_GE(spec->max_args, 0) << spec->full_name;
    if (spec->max_args > 0) {
      EXPECT_LE(std::abs(spec->arity), spec->max_args) << spec->full_name;
      // A maximum only means something for a variadic row.
      EXPECT_LT(spec->arity, 0) << spec->full_name << " has a fixed arity and a maximum";
    }
  }
}

TEST(CommandTable, ContainersAndSubcommandsCountTheContainerName) {
  for (const CommandSpec& spec : Table().commands()) {
    if (spec.subcommands.empty()) continue;
    if (spec.handler == nullptr) {
      EXPECT_LE(spec.arity, -2) << spec.full_name << " needs a subcommand";
    }
    for (const CommandSpec& sub : spec.subcommands) {
      EXPECT_GE(std::abs(sub.arity), 2) << sub.full_name;
    }
  }
}

TEST(CommandTable, KeyPositionsAreConsistent) {
  for (const CommandSpec* spec : EveryRow()) {
    SCOPED_TRACE(spec->full_name);
    EXPECT_GE(spec->first_key, 0);
    if (spec->first_key == 0) {
      EXPECT_EQ(spec->last_key, 0);
      EXPECT_EQ(spec->key_step, 0);
      continue;
    }
    EXPECT_GT(spec->key_step, 0);
    EXPECT_TRUE(spec->last_key < 0 || spec->last_key >= spec->first_key);
    // The minimum argument count always reaches the first (and a fixed last) key.
    EXPECT_LT(spec->first_key, std::abs(spec->arity));
    if (spec->last_key > 0) {
      EXPECT_LT(spec->last_key, std::abs(spec->arity));
    }
  }
}

TEST(CommandTable, WriteCommandsNameTheirKeysOrTouchTheWholeKeyspace) {
  // Key locks (and WATCH, and cluster-aware clients) rely on this. No write
  // command is keyless today; add it here, with the reason, if one must be.
  const std::set<std::string> keyless_writes = {};
  for (const CommandSpec* spec : EveryRow()) {
    if ((spec->flags & kCmdWrite) == 0) continue;
    if (keyless_writes.count(spec->full_name)) continue;
    EXPECT_TRUE(spec->first_key > 0 || (spec->flags & kCmdAllKeys) != 0) << spec->full_name;
  }
}

TEST(CommandTable, FlagsDoNotContradictEachOther) {
  for (const CommandSpec* spec : EveryRow()) {
    SCOPED_TRACE(spec->full_name);
    EXPECT_FALSE((spec->flags & kCmdWrite) && (spec->flags & kCmdReadOnly));
    if (spec->flags & kCmdDenyOom) {
      EXPECT_TRUE(spec->flags & kCmdWrite);
    }
  }
}

TEST(CommandTable, OnlyTheTransactionVerbsRunImmediatelyInsideMulti) {
  std::set<std::string> no_multi;
  for (const CommandSpec* spec : EveryRow()) {
    if (spec->flags & kCmdNoMulti) no_multi.insert(spec->full_name);
  }
  // As in Redis (processCommand): EXEC, DISCARD, MULTI, WATCH, QUIT and
  // RESET run at once; everything else, UNWATCH included, is queued.
  EXPECT_EQ(no_multi,
            (std::set<std::string>{"discard", "exec", "multi", "quit", "reset", "watch"}));
}

TEST(CommandTable, EveryRowIsDocumented) {
  for (const CommandSpec* spec : EveryRow()) {
    SCOPED_TRACE(spec->full_name);
    EXPECT_FALSE(spec->summary.empty());
    EXPECT_FALSE(spec->group.empty());
    ASSERT_FALSE(spec->since.empty());
    // "1.0.0", "2.8.13": digits and dots.
    EXPECT_EQ(spec->since.find_first_not_of("0123456789."), std::string_view::npos);
    EXPECT_NE(spec->since.front(), '.');
    EXPECT_NE(spec->since.back(), '.');
  }
}

TEST(CommandTable, BloomRowsCarryRedisBloomsFlags) {
  // COMPAT §1.4: reserve/add/madd/insert are "write deny-oom";
  // exists/mexists/info/card are "readonly fast".
  constexpr uint32_t kShapeFlags = kCmdWrite | kCmdReadOnly | kCmdFast | kCmdDenyOom;
  const std::map<std::string, uint32_t> expected = {
      {"bf.reserve", kCmdWrite | kCmdDenyOom}, {"bf.add", kCmdWrite | kCmdDenyOom},
      {"bf.madd", kCmdWrite | kCmdDenyOom},    {"bf.insert", kCmdWrite | kCmdDenyOom},
      {"bf.exists", kCmdReadOnly | kCmdFast},  {"bf.mexists", kCmdReadOnly | kCmdFast},
      {"bf.info", kCmdReadOnly | kCmdFast},    {"bf.card", kCmdReadOnly | kCmdFast},
  };
  std::set<std::string> seen;
  for (const CommandSpec* spec : EveryRow()) {
    if (spec->full_name.rfind("bf.", 0) != 0) continue;
    seen.insert(spec->full_name);
    auto it = expected.find(spec->full_name);
    if (it == expected.end()) continue;  // a newer BF.* row; checked once COMPAT lists it
    EXPECT_EQ(spec->flags & kShapeFlags, it->second) << spec->full_name;
    EXPECT_EQ(spec->group, "bf") << spec->full_name;
    // One key, at argument 1.
    EXPECT_EQ(spec->first_key, 1) << spec->full_name;
    EXPECT_EQ(spec->last_key, 1) << spec->full_name;
    EXPECT_EQ(spec->key_step, 1) << spec->full_name;
  }
  for (const auto& [name, flags] : expected) EXPECT_TRUE(seen.count(name)) << name;
}

TEST(CommandTable, BloomRowsHaveRedisBloomsArities) {
  EXPECT_EQ(Row("bf.reserve").arity, -4);
  EXPECT_EQ(Row("bf.reserve").max_args, 13);  // ... WINDOW s GENERATIONS n SEED s
  EXPECT_EQ(Row("bf.add").arity, 3);
  EXPECT_EQ(Row("bf.madd").arity, -3);
  EXPECT_EQ(Row("bf.insert").arity, -4);
  EXPECT_EQ(Row("bf.exists").arity, 3);
  EXPECT_EQ(Row("bf.mexists").arity, -3);
  EXPECT_EQ(Row("bf.card").arity, 2);
  EXPECT_EQ(Row("bf.info").arity, -2);
  EXPECT_EQ(Row("bf.info").max_args, 3);
}

TEST(CommandTable, FindIgnoresCaseAndRefusesUnknownNames) {
  EXPECT_EQ(Table().Find("BF.ADD"), Table().Find("bf.add"));
  EXPECT_EQ(Table().Find("Bf.Add"), Table().Find("bf.add"));
  EXPECT_EQ(Table().Find("bf.add")->full_name, "bf.add");
  EXPECT_EQ(Table().Find("nosuchcommand"), nullptr);
  EXPECT_EQ(Table().Find(""), nullptr);
  EXPECT_EQ(Table().Find("client|setname"), nullptr);  // subcommands are not top-level
  EXPECT_EQ(Table().Find("bf.add "), nullptr);
}

TEST(CommandTable, FindSubcommandIgnoresCase) {
  const CommandSpec& client = Row("client");
  ASSERT_NE(CommandTable::FindSubcommand(client, "SETNAME"), nullptr);
  EXPECT_EQ(CommandTable::FindSubcommand(client, "SetName")->full_name, "client|setname");
  EXPECT_EQ(CommandTable::FindSubcommand(client, "nosuch"), nullptr);
  EXPECT_EQ(CommandTable::FindSubcommand(Row("ping"), "x"), nullptr);
}

TEST(CommandTable, KeyIndicesOfDelAreEveryArgument) {
  EXPECT_EQ(Keys(Row("del"), 4), (std::vector<size_t>{1, 2, 3}));
  EXPECT_EQ(Keys(Row("del"), 2), (std::vector<size_t>{1}));
  EXPECT_EQ(Keys(Row("exists"), 3), (std::vector<size_t>{1, 2}));
}

TEST(CommandTable, KeyIndicesOfRenameAreSourceAndTarget) {
  EXPECT_EQ(Keys(Row("rename"), 3), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(Keys(Row("renamenx"), 3), (std::vector<size_t>{1, 2}));
}

TEST(CommandTable, KeyIndicesOfMemoryUsageSkipTheSubcommandWord) {
  const CommandSpec& usage = SubRow("memory", "usage");
  EXPECT_EQ(Keys(usage, 3), (std::vector<size_t>{2}));
  EXPECT_EQ(Keys(usage, 5), (std::vector<size_t>{2}));  // MEMORY USAGE k SAMPLES 5
}

TEST(CommandTable, KeyIndicesOfBloomCommandsAreTheFirstArgumentOnly) {
  EXPECT_EQ(Keys(Row("bf.madd"), 6), (std::vector<size_t>{1}));
  EXPECT_EQ(Keys(Row("bf.insert"), 8), (std::vector<size_t>{1}));
  EXPECT_EQ(Keys(Row("bf.info"), 3), (std::vector<size_t>{1}));
}

TEST(CommandTable, KeyIndicesOfKeylessCommandsAreEmpty) {
  EXPECT_TRUE(Keys(Row("ping"), 1).empty());
  EXPECT_TRUE(Keys(Row("dbsize"), 1).empty());
  EXPECT_TRUE(Keys(Row("scan"), 4).empty());
  EXPECT_TRUE(Keys(SubRow("client", "setname"), 3).empty());
}

TEST(CommandTable, KeyIndicesNeverPointPastTheArguments) {
  for (const CommandSpec* spec : EveryRow()) {
    for (size_t argc = 0; argc <= 8; ++argc) {
      for (size_t index : Keys(*spec, argc)) {
        EXPECT_LT(index, argc) << spec->full_name << " argc " << argc;
        EXPECT_GE(index, 1u) << spec->full_name;
      }
    }
  }
}

TEST(CommandTable, ArityMatchesExactArity) {
  const CommandSpec& add = Row("bf.add");
  EXPECT_FALSE(CommandTable::ArityMatches(add, 2));
  EXPECT_TRUE(CommandTable::ArityMatches(add, 3));
  EXPECT_FALSE(CommandTable::ArityMatches(add, 4));
}

TEST(CommandTable, ArityMatchesMinimumArity) {
  const CommandSpec& madd = Row("bf.madd");
  EXPECT_FALSE(CommandTable::ArityMatches(madd, 1));
  EXPECT_FALSE(CommandTable::ArityMatches(madd, 2));
  EXPECT_TRUE(CommandTable::ArityMatches(madd, 3));
  EXPECT_TRUE(CommandTable::ArityMatches(madd, 10000));
}

TEST(CommandTable, ArityMatchesMinimumAndMaximum) {
  const CommandSpec& info = Row("bf.info");
  EXPECT_FALSE(CommandTable::ArityMatches(info, 1));
  EXPECT_TRUE(CommandTable::ArityMatches(info, 2));
  EXPECT_TRUE(CommandTable::ArityMatches(info, 3));
  EXPECT_FALSE(CommandTable::ArityMatches(info, 4));
  const CommandSpec& reserve = Row("bf.reserve");
  EXPECT_FALSE(CommandTable::ArityMatches(reserve, 3));
  EXPECT_TRUE(CommandTable::ArityMatches(reserve, 13));
  EXPECT_FALSE(CommandTable::ArityMatches(reserve, 14));
}

// Every argument of a merge is a key, so transactions, ACLs and the
// exclusive key locks see the sources as well as dest.
TEST(CommandTable, MergeRowsNameEveryArgumentAsAKeyAndLockThemExclusively) {
  for (std::string_view name : {"bf.merge", "cbf.merge"}) {
    const CommandSpec& spec = Row(name);
    EXPECT_EQ(spec.arity, -3) << name;
    EXPECT_EQ(spec.first_key, 1) << name;
    EXPECT_EQ(spec.last_key, -1) << name;
    EXPECT_EQ(spec.key_step, 1) << name;
    EXPECT_EQ(spec.flags & (kCmdWrite | kCmdDenyOom), kCmdWrite | kCmdDenyOom) << name;
    EXPECT_EQ(spec.flags & kCmdOrderFree, 0u) << name << ": its keys must be locked exclusively";
  }
}

TEST(CommandTable, ArityMatchesOnHandBuiltRows) {
  CommandSpec fixed, at_least, bounded;
  fixed.arity = 2;
  at_least.arity = -1;
  bounded.arity = -2;
  bounded.max_args = 2;
  EXPECT_FALSE(CommandTable::ArityMatches(fixed, 0));
  EXPECT_TRUE(CommandTable::ArityMatches(fixed, 2));
  EXPECT_TRUE(CommandTable::ArityMatches(at_least, 1));
  EXPECT_TRUE(CommandTable::ArityMatches(at_least, 50));
  EXPECT_TRUE(CommandTable::ArityMatches(bounded, 2));
  EXPECT_FALSE(CommandTable::ArityMatches(bounded, 3));
}

TEST(CommandTable, AsciiLowerAndEqualsIgnoreCaseTouchOnlyAsciiLetters) {
  EXPECT_EQ(AsciiLower("BF.ADD-Ä@[Z]"), "bf.add-Ä@[z]");
  EXPECT_TRUE(EqualsIgnoreCase("NonScaling", "NONSCALING"));
  EXPECT_FALSE(EqualsIgnoreCase("NONSCALING", "NONSCALIN"));
  EXPECT_FALSE(EqualsIgnoreCase("@", "`"));  // 0x40 and 0x60 differ by the case bit only
  EXPECT_TRUE(EqualsIgnoreCase("", ""));
}

}  // namespace
}  // namespace bloomgate

namespace bloomgate {
namespace {

std::string Upper(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper;
}

// The docs' command lists are documentation users read instead of COMMAND:
// a row added to the table without a word there fails here. Each page of
// docs/commands/ opens with a "## Commands" section, the list of its family;
// names are matched only in those lists (not in the examples or prose
// below them) and as whole names:
// `BF.ADD` does not count for BF.ADDX, and a subcommand only counts where
// its parent lists it, in the parent's code span (`CLIENT ID | SETNAME`)
// or in the parenthesis after it (`COMMAND` (and `COUNT`, ...)).

// The text from `heading` (a line of its own) to the next heading of any
// level: "## Commands" ends where "## Examples" begins.
std::string Section(const std::string& text, std::string_view heading) {
  const size_t start = text.find("\n" + std::string(heading) + "\n");
  if (start == std::string::npos) return "";
  const size_t end = text.find("\n#", start + 1);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
}

// Where `name` starts a whole word of `text` at or after `from`, or npos.
size_t FindWord(std::string_view text, std::string_view name, size_t from = 0) {
  for (size_t at = text.find(name, from); at != std::string_view::npos;
       at = text.find(name, at + 1)) {
    const bool starts = at == 0 || !IsNameChar(text[at - 1]);
    const size_t end = at + name.size();
    const bool ends = end == text.size() || !IsNameChar(text[end]);
    if (starts && ends) return at;
  }
  return std::string_view::npos;
}

// Everything the list says about `parent`'s subcommands: each code span
// that starts with the parent's name, and the parenthesis right after a
// span that is the name alone.
std::string SubcommandEntries(const std::string& list, const std::string& parent) {
  std::string entries;
  for (size_t at = list.find("`" + parent); at != std::string::npos;
       at = list.find("`" + parent, at + 1)) {
    const size_t name_end = at + 1 + parent.size();
    if (name_end < list.size() && IsNameChar(list[name_end])) continue;  // a longer name
    const size_t close = list.find('`', name_end);
    if (close == std::string::npos) break;
    entries += list.substr(name_end, close - name_end) + "\n";
    if (close == name_end && list.compare(close + 1, 2, " (") == 0) {
      const size_t paren_end = list.find(')', close);
      entries += list.substr(close + 1, paren_end - close) + "\n";
    }
  }
  return entries;
}

TEST(CommandTable, TheDocsNameEveryCommandAndSubcommand) {
  // The pages are under the repository root (tests/CMakeLists.txt names it).
  const std::filesystem::path pages = std::filesystem::path(BLOOMGATE_SOURCE_DIR) / "docs/commands";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(pages)) {
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  }
  ASSERT_GE(files.size(), 8u) << pages << " should hold one page per command family";
  std::string list;
  for (const std::filesystem::path& file : files) {
    std::ifstream in(file);
    ASSERT_TRUE(in) << "cannot open " << file;
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string section = Section(text, "## Commands");
    EXPECT_FALSE(section.empty()) << file << " has no \"## Commands\" section";
    list += section + "\n";
  }
  for (const CommandSpec& spec : Table().commands()) {
    const std::string name = Upper(spec.name);
    size_t at = FindWord(list, name);
    while (at != std::string::npos && (at == 0 || list[at - 1] != '`')) {
      at = FindWord(list, name, at + 1);  // a word inside a span, e.g. SHUTDOWN [SAVE]
    }
    EXPECT_NE(at, std::string::npos) << "no command list in docs/commands/ names `" << name;
    const std::string entries = SubcommandEntries(list, name);
    for (const CommandSpec& sub : spec.subcommands) {
      EXPECT_NE(FindWord(entries, Upper(sub.name)), std::string::npos)
          << "no command list in docs/commands/ lists " << name << " " << Upper(sub.name)
          << " (what it says of " << name << ": \"" << entries << "\")";
    }
  }
}

}  // namespace
}  // namespace bloomgate
