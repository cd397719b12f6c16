// CLUSTER FAILOVER TAKEOVER's view change (Redis's bump without consensus,
// then the replica's takeover) and cluster-allow-replica-migration's part
// of the role switch after a claim (clusterUpdateSlotsConfigWith): a master
// emptied toward a node holding other slots follows it only when set.
#include <gtest/gtest.h>

#include "server/cluster_bus/bus_receiver.h"
#include "server/cluster_bus/bus_sender.h"
#include "server/cluster_bus/replica_election.h"
#include "../cluster_peer.h"

namespace bloomgate {
namespace takeover_roles_test {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;
const std::string kMe(40, 'a');
const std::string kMaster(40, 'b');
const std::string kOther(40, 'c');

ClusterNode Peer(const std::string& id, uint16_t port, uint32_t role) {
  ClusterNode node = testing::MasterPeer(id, port);
  node.flags = role;
  return node;
}

// Myself (7000) a replica of kMaster (7001, slots 0-99, epoch 1); kOther
// (7002) a master of slots 100-16383 at epoch `other_epoch`.
ClusterView ReplicaView(uint64_t my_epoch, uint64_t other_epoch) {
  ClusterView view = FreshView(7000, 17000, "127.0.0.1");
  view.me().id = kMe;
  view.me().flags = (view.me().flags & ~kNodeMaster) | kNodeSlave;
  view.me().master_id = kMaster;
  view.me().config_epoch = my_epoch;
  ClusterNode master = Peer(kMaster, 7001, kNodeMaster);
  master.config_epoch = 1;
  const int32_t m = view.Add(master);
  ClusterNode other = Peer(kOther, 7002, kNodeMaster);
  other.config_epoch = other_epoch;
  const int32_t o = view.Add(other);
  for (size_t s = 0; s < kClusterSlots; ++s) view.owner[s] = s < 100 ? m : o;
  view.current_epoch = std::max(my_epoch, other_epoch);
  view.RefreshHealth(true);
  return view;
}

// As the command does it, under one Update.
bool TakeOver(ClusterView* view) {
  view->BumpEpochWithoutConsensus();
  return ReplaceMyMaster(view, view->me().config_epoch);
}

TEST(Takeover, ANewEpochOfItsOwnAndTheMastersSlots) {
  ClusterView view = ReplicaView(0, 2);
  ASSERT_TRUE(TakeOver(&view));
  EXPECT_EQ(view.me().config_epoch, 3u);
  EXPECT_EQ(view.current_epoch, 3u);
  EXPECT_TRUE(view.me().Has(kNodeMaster));
  EXPECT_TRUE(view.me().master_id.empty());
  EXPECT_EQ(view.SlotCount(view.myself), 100u);
  EXPECT_EQ(view.SlotCount(view.Find(kMaster)), 0u);
  EXPECT_FALSE(TakeOver(&view));  // a master has no master to replace
}

// A replica already holding the highest epoch keeps it (Redis's rule):
// it is above its master's all the same.
TEST(Takeover, AReplicaHoldingTheHighestEpochKeepsIt) {
  ClusterView view = ReplicaView(6, 2);
  ASSERT_TRUE(TakeOver(&view));
  EXPECT_EQ(view.me().config_epoch, 6u);
  EXPECT_EQ(view.current_epoch, 6u);
}

TEST(Takeover, TheOldMasterHearsItAndFollows) {
  ClusterView promoted = ReplicaView(0, 2);
  ASSERT_TRUE(TakeOver(&promoted));
  ClusterView old = FreshView(7001, 17001, "127.0.0.1");
  old.me().id = kMaster;
  old.me().config_epoch = 1;
  ClusterNode replica = Peer(kMe, 7000, kNodeSlave);
  replica.master_id = kMaster;
  old.Add(replica);
  ClusterNode other = Peer(kOther, 7002, kNodeMaster);
  other.config_epoch = 2;
  const int32_t o = old.Add(other);
  for (size_t s = 0; s < kClusterSlots; ++s) old.owner[s] = s < 100 ? old.myself : o;
  old.current_epoch = 2;
  BusLinkContext link{"127.0.0.1", "127.0.0.1", "", false};
  const BusReceiveResult result = ApplyBusMessage(
      &old, DescribeMyself(promoted, BusMessageType::kPing, ""), link, kNow, nullptr);
  EXPECT_TRUE(result.my_claim_changed);
  EXPECT_TRUE(old.me().Has(kNodeSlave));
  EXPECT_EQ(old.me().master_id, kMe);
}

// kOther claims kMaster's slots 0-99 at a higher epoch and holds the rest:
// with replica migration off, the emptied master stays an empty master.
TEST(SlotClaimRolesAndMigration, AnEmptiedMasterFollowsAClaimerWithOtherSlotsOnlyIfAllowed) {
  for (const bool allow : {false, true}) {
    ClusterView view = FreshView(7001, 17001, "127.0.0.1");
    view.me().id = kMaster;
    view.me().config_epoch = 1;
    ClusterNode other = Peer(kOther, 7002, kNodeMaster);
    other.config_epoch = 1;
    const int32_t o = view.Add(other);
    for (size_t s = 0; s < kClusterSlots; ++s) view.owner[s] = s < 100 ? view.myself : o;
    view.current_epoch = 1;

    ClusterView claimer = view;
    claimer.myself = o;
    claimer.nodes[static_cast<size_t>(o)].flags |= kNodeMyself;
    claimer.nodes[0].flags &= ~kNodeMyself;
    claimer.nodes[static_cast<size_t>(o)].config_epoch = 2;
    claimer.current_epoch = 2;
    for (size_t s = 0; s < 100; ++s) claimer.owner[s] = o;

    BusLinkContext link{"127.0.0.1", "127.0.0.1", "", false};
    link.allow_replica_migration = allow;
    ApplyBusMessage(&view, DescribeMyself(claimer, BusMessageType::kPing, ""), link, kNow,
                    nullptr);
    EXPECT_EQ(view.SlotCount(o), kClusterSlots);
    EXPECT_EQ(view.me().Has(kNodeSlave), allow) << allow;
    EXPECT_EQ(view.me().Has(kNodeMaster), !allow) << allow;
  }
}

// A claimer that took exactly this shard's slots (a failover) is followed
// whatever the setting.
TEST(SlotClaimRolesAndMigration, AFailoverWinnerIsFollowedWithMigrationOff) {
  ClusterView promoted = ReplicaView(0, 2);
  ASSERT_TRUE(TakeOver(&promoted));
  ClusterView sibling = ReplicaView(0, 2);
  sibling.me().id = std::string(40, 'd');
  sibling.me().port = 7003;
  ClusterNode me = Peer(kMe, 7000, kNodeSlave);
  me.master_id = kMaster;
  sibling.Add(me);
  BusLinkContext link{"127.0.0.1", "127.0.0.1", "", false};
  link.allow_replica_migration = false;
  ApplyBusMessage(&sibling, DescribeMyself(promoted, BusMessageType::kPing, ""), link, kNow,
                  nullptr);
  EXPECT_TRUE(sibling.me().Has(kNodeSlave));
  EXPECT_EQ(sibling.me().master_id, kMe);
}

}  // namespace
}  // namespace takeover_roles_test
}  // namespace bloomgate
