// The family registry walked whole: every family the server serves has a
// codec, a distinct TYPE name, its own command group with rows in the
// command table, an ACL category and a check-snapshot summary; only
// families whose writes commute carry kCmdOrderFree rows; and every kind the
// persistent formats know is served (else a snapshot could load a key that
// TYPE cannot name and no command can reach).

#include "server/catalogue/family_registry.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "persistence/codec/codec_registry.h"
#include "server/catalogue/command_table.h"

namespace bloomgate {
namespace {

std::string Name(const FilterFamily& family) {
  return "kind " + std::to_string(static_cast<int>(family.kind)) + " (" +
         std::string(family.type_name) + ")";
}

TEST(FamilyRegistry, KindsAreDistinctAndEachHasACodec) {
  std::set<FilterKind> kinds;
  for (const FilterFamily* family : RegisteredFamilies()) {
    EXPECT_TRUE(kinds.insert(family->kind).second) << Name(*family) << " registered twice";
    EXPECT_NE(FindCodec(family->kind), nullptr)
        << Name(*family) << " has no codec in persistence/codec/codec_registry.cc";
    EXPECT_EQ(FindFamily(family->kind), family) << Name(*family);
  }
  EXPECT_FALSE(kinds.empty());
}

TEST(FamilyRegistry, EveryPersistentKindIsServed) {
  for (const FamilyCodec* codec : RegisteredCodecs()) {
    EXPECT_NE(FindFamily(codec->kind()), nullptr)
        << codec->name() << " can be loaded from a snapshot but no family serves it";
  }
}

TEST(FamilyRegistry, EveryFamilyHasADistinctTypeNameGroupAndACategory) {
  std::set<std::string_view> type_names;
  std::set<std::string_view> groups;
  for (const FilterFamily* family : RegisteredFamilies()) {
    // RedisBloom's module type names are nine characters ("MBbloom--").
    EXPECT_EQ(family->type_name.size(), 9u) << Name(*family);
    EXPECT_NE(family->type_name, "none") << Name(*family);
    EXPECT_TRUE(type_names.insert(family->type_name).second) << Name(*family);
    EXPECT_EQ(TypeName(family->kind), family->type_name);
    EXPECT_FALSE(family->group.empty()) << Name(*family);
    // A variant (no rows of its own) shares its group with the family whose
    // rows serve it, registered before it.
    if (family->commands == nullptr) {
      ASSERT_NE(FamilyOfGroup(family->group), nullptr) << Name(*family);
      EXPECT_NE(FamilyOfGroup(family->group)->commands, nullptr) << Name(*family);
      EXPECT_EQ(FamilyOfGroup(family->group)->writes, family->writes) << Name(*family);
      continue;
    }
    EXPECT_TRUE(groups.insert(family->group).second)
        << Name(*family) << " shares COMMAND DOCS group " << family->group;
    EXPECT_EQ(FamilyOfGroup(family->group), family) << Name(*family);
    EXPECT_GT(family->acl_category.size(), 1u) << Name(*family);
    EXPECT_EQ(family->acl_category.substr(0, 1), "@") << Name(*family);
    EXPECT_NE(family->describe, nullptr) << Name(*family);
  }
}

TEST(FamilyRegistry, EveryFamilysRowsAreInTheCommandTableUnderItsGroup) {
  const CommandTable table;
  for (const FilterFamily* family : RegisteredFamilies()) {
    if (family->commands == nullptr) continue;  // a variant: see above
    const std::vector<CommandSpec> rows = family->commands();
    EXPECT_FALSE(rows.empty()) << Name(*family) << " has no commands";
    bool order_free = false;
    for (const CommandSpec& row : rows) {
      EXPECT_EQ(row.group, family->group) << row.name << " of " << Name(*family);
      EXPECT_NE(table.Find(row.name), nullptr) << row.name << " missing from the command table";
      if (row.flags & kCmdOrderFree) order_free = true;
    }
    // kCmdOrderFree lets writes to one key run side by side under shared
    // locks: only a family whose writes commute may carry it, and a family
    // declared commuting that carries it nowhere has a stale declaration.
    EXPECT_EQ(order_free, family->writes == FamilyWrites::kCommute) << Name(*family);
  }
}

TEST(FamilyRegistry, ACommutingFamilysScanDumpHoldsItsKeyFromTheOrderFreeWrites) {
  // SCANDUMP is a read, and reads share a key's lock with kCmdOrderFree
  // writes: a commuting family's dump must take its key exclusively, or a
  // chunk's header and cells (CMS's total and counters) come from two moments.
  for (const FilterFamily* family : RegisteredFamilies()) {
    if (family->commands == nullptr) continue;  // a variant: its family's rows
    for (const CommandSpec& row : family->commands()) {
      if (!row.name.ends_with(".scandump")) continue;
      EXPECT_EQ((row.flags & kCmdExclusiveKeys) != 0, family->writes == FamilyWrites::kCommute)
          << row.name << " of " << Name(*family);
    }
  }
}

TEST(FamilyRegistry, AFamilyWrittenWhileWritersRunHasCommutingWrites) {
  // A snapshot writes a family's payload while writers run only if its
  // codec allows it; that is sound only when its writes commute (set bits).
  for (const FilterFamily* family : RegisteredFamilies()) {
    const FamilyCodec* codec = FindCodec(family->kind);
    if (codec == nullptr) continue;  // KindsAreDistinctAndEachHasACodec fails
    if (codec->payload_readable_while_written()) {
      EXPECT_EQ(family->writes, FamilyWrites::kCommute) << Name(*family);
    }
  }
}

TEST(FamilyRegistry, AnUnknownKindHasNoTypeName) {
  EXPECT_EQ(TypeName(static_cast<FilterKind>(200)), "none");
  EXPECT_EQ(FamilyOfGroup("generic"), nullptr);
}

}  // namespace
}  // namespace bloomgate
