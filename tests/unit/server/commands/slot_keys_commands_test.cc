// CLUSTER COUNTKEYSINSLOT / GETKEYSINSLOT (server/commands/cluster/
// slot_keys_commands.cc), run through their rows' handlers as the CLUSTER
// container runs them.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "../session.h"
#include "server/base/key_slot.h"
#include "server/commands/cluster/slot_keys_commands.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

class SlotKeysCommands : public ::testing::Test {
 protected:
  SlotKeysCommands() : server_(MakeServer()), s_(server_.get()) {
    for (CommandSpec& row : rows_) row.full_name = "cluster|" + std::string(row.name);
  }

  // "CLUSTER <sub> args...", run by the subcommand's handler.
  std::string Cluster(const Args& args) {
    const CommandSpec* row = nullptr;
    for (const CommandSpec& candidate : rows_) {
      if (EqualsIgnoreCase(candidate.name, args[1])) row = &candidate;
    }
    EXPECT_NE(row, nullptr) << args[1];
    EXPECT_TRUE(CommandTable::ArityMatches(*row, args.size()));
    std::vector<std::string_view> views(args.begin(), args.end());
    std::string out;
    ReplyBuilder reply(&out);
    CommandContext ctx{views, *row, reply, s_.client(), *server_, NowMs()};
    row->handler(ctx);
    return out;
  }
  void Create(const std::string& key) { ASSERT_EQ(s_.Run({"BF.ADD", key, "x"}), Int(1)); }

  std::unique_ptr<ServerContext> server_;
  Session s_;
  std::vector<CommandSpec> rows_ = ClusterSlotKeysSubcommands();
};

TEST_F(SlotKeysCommands, CountAndListTheKeysOfASlot) {
  server_->keyspace.EnableSlotIndex();
  for (const char* key : {"{user1}.a", "{user1}.b", "{user1}.c", "other"}) Create(key);
  const std::string slot = std::to_string(KeySlot("user1"));
  EXPECT_EQ(Cluster({"CLUSTER", "COUNTKEYSINSLOT", slot}), Int(3));
  EXPECT_EQ(Cluster({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(KeySlot("other"))}), Int(1));
  const std::string two = Cluster({"CLUSTER", "GETKEYSINSLOT", slot, "2"});
  EXPECT_TRUE(two.starts_with(Arr(2))) << two;
  const std::string all = Cluster({"CLUSTER", "GETKEYSINSLOT", slot, "10"});
  EXPECT_EQ(all.substr(0, 4), Arr(3));
  for (const char* key : {"{user1}.a", "{user1}.b", "{user1}.c"}) {
    EXPECT_NE(all.find(Bulk(key)), std::string::npos) << all;
  }
  EXPECT_EQ(Cluster({"CLUSTER", "GETKEYSINSLOT", slot, "0"}), Arr(0));
  // DEL, RENAME and FLUSHALL through the commands keep it in step.
  EXPECT_EQ(s_.Run({"DEL", "{user1}.a"}), Int(1));
  EXPECT_EQ(s_.Run({"RENAME", "{user1}.b", "moved"}), kOk);
  EXPECT_EQ(Cluster({"CLUSTER", "COUNTKEYSINSLOT", slot}), Int(1));
  EXPECT_EQ(Cluster({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(KeySlot("moved"))}), Int(1));
  EXPECT_EQ(s_.Run({"FLUSHALL"}), kOk);
  EXPECT_EQ(Cluster({"CLUSTER", "COUNTKEYSINSLOT", slot}), Int(0));
}

TEST_F(SlotKeysCommands, RefuseBadSlotsAndCountsWithRedisTexts) {
  server_->keyspace.EnableSlotIndex();
  EXPECT_EQ(Cluster({"CLUSTER", "COUNTKEYSINSLOT", "16384"}), Err(errors::kSlotKeysInvalidSlot));
  EXPECT_EQ(Cluster({"CLUSTER", "COUNTKEYSINSLOT", "-1"}), Err(errors::kSlotKeysInvalidSlot));
  EXPECT_EQ(Cluster({"CLUSTER", "COUNTKEYSINSLOT", "x"}), Err(errors::kNotInteger));
  EXPECT_EQ(Cluster({"CLUSTER", "GETKEYSINSLOT", "16384", "1"}),
            Err(errors::kSlotKeysInvalidSlotOrCount));
  EXPECT_EQ(Cluster({"CLUSTER", "GETKEYSINSLOT", "1", "-1"}),
            Err(errors::kSlotKeysInvalidSlotOrCount));
  EXPECT_EQ(Cluster({"CLUSTER", "GETKEYSINSLOT", "1", "x"}), Err(errors::kNotInteger));
  EXPECT_EQ(Cluster({"CLUSTER", "GETKEYSINSLOT", "y", "1"}), Err(errors::kNotInteger));
}

TEST_F(SlotKeysCommands, WithoutClusterModeThereIsNoIndexToAnswerFrom) {
  EXPECT_EQ(Cluster({"CLUSTER", "COUNTKEYSINSLOT", "0"}),
            Err(errors::kClusterDisabled));
  EXPECT_EQ(Cluster({"CLUSTER", "GETKEYSINSLOT", "0", "1"}),
            Err(errors::kClusterDisabled));
}

}  // namespace
}  // namespace bloomgate
