#include "server/cluster_bus/epoch_rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace bloomgate {
namespace {

TEST(SlotClaim, AnUnownedSlotGoesToAnyClaim) {
  EXPECT_TRUE(SlotClaimWins(/*slot_owned=*/false, /*owner_config_epoch=*/0, /*claim_epoch=*/0));
}

TEST(SlotClaim, OnlyAHigherConfigEpochTakesAnOwnedSlot) {
  EXPECT_TRUE(SlotClaimWins(true, 4, 5));
  EXPECT_FALSE(SlotClaimWins(true, 5, 5));
  EXPECT_FALSE(SlotClaimWins(true, 6, 5));
}

TEST(CurrentEpoch, FollowsTheHighestSeen) {
  EXPECT_EQ(NextCurrentEpoch(3, 7), 7u);
  EXPECT_EQ(NextCurrentEpoch(7, 3), 7u);
  EXPECT_EQ(NextCurrentEpoch(7, 7), 7u);
}

const std::string kSmall = "1000000000000000000000000000000000000000";
const std::string kLarge = "f000000000000000000000000000000000000000";

TEST(EpochCollision, TheSmallerIdBumps) {
  const EpochCollisionOutcome small = ResolveConfigEpochCollision(
      kSmall, /*i_am_master=*/true, /*my_config_epoch=*/1, /*current_epoch=*/3, kLarge,
      /*sender_is_master=*/true, /*sender_config_epoch=*/1);
  EXPECT_TRUE(small.bumped);
  EXPECT_EQ(small.current_epoch, 4u);
  EXPECT_EQ(small.config_epoch, 4u);
  const EpochCollisionOutcome large =
      ResolveConfigEpochCollision(kLarge, true, 1, 3, kSmall, true, 1);
  EXPECT_FALSE(large.bumped);
  EXPECT_EQ(large.current_epoch, 3u);
  EXPECT_EQ(large.config_epoch, 1u);
}

TEST(EpochCollision, NothingWithoutACollisionBetweenMasters) {
  EXPECT_FALSE(ResolveConfigEpochCollision(kSmall, true, 1, 3, kLarge, true, 2).bumped);
  EXPECT_FALSE(ResolveConfigEpochCollision(kSmall, false, 1, 3, kLarge, true, 1).bumped);
  EXPECT_FALSE(ResolveConfigEpochCollision(kSmall, true, 1, 3, kLarge, false, 1).bumped);
  EXPECT_FALSE(ResolveConfigEpochCollision(kSmall, true, 1, 3, kSmall, true, 1).bumped);
}

// Five masters that all start at config epoch 0 (a fresh `create`), each
// hearing from every other over and over: the rule leaves them distinct.
TEST(EpochCollision, RepeatedRoundsMakeEveryEpochDistinct) {
  struct Node {
    std::string id;
    uint64_t current = 0, config = 0;
  };
  std::vector<Node> nodes;
  for (char c : std::string("3a7c1")) nodes.push_back({std::string(40, c), 0, 0});
  for (int round = 0; round < 10; ++round) {
    for (Node& me : nodes) {
      for (const Node& sender : nodes) {
        me.current = NextCurrentEpoch(me.current, sender.current);
        const EpochCollisionOutcome o = ResolveConfigEpochCollision(
            me.id, true, me.config, me.current, sender.id, true, sender.config);
        me.current = o.current_epoch;
        me.config = o.config_epoch;
      }
    }
  }
  std::set<uint64_t> epochs;
  for (const Node& n : nodes) epochs.insert(n.config);
  EXPECT_EQ(epochs.size(), nodes.size());
  // The largest id never had to move.
  const auto largest = std::max_element(nodes.begin(), nodes.end(),
                                        [](const Node& a, const Node& b) { return a.id < b.id; });
  EXPECT_EQ(largest->config, 0u);
}

}  // namespace
}  // namespace bloomgate
