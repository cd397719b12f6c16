// The role changes of a failover over a hand-built view: TAKEOVER's
// replica taking its master's slots, and a node following the master that
// took its shard's last slot, through the receiver as on the wire.
#include "server/cluster_bus/failover_roles.h"

#include <gtest/gtest.h>

#include "server/cluster_bus/bus_receiver.h"
#include "server/cluster_bus/bus_sender.h"

namespace bloomgate {
namespace failover_roles_test {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;
const std::string kMe(40, 'a');
const std::string kMaster(40, 'b');
const std::string kOther(40, 'c');

ClusterNode Peer(const std::string& id, uint16_t port, uint32_t role) {
  ClusterNode node;
  node.id = id;
  node.ip = "127.0.0.1";
  node.port = port;
  node.cport = static_cast<uint16_t>(port + 10000);
  node.flags = role;
  node.link_connected = true;
  return node;
}

// Myself (7000) a replica of kMaster (7001, slots 0-99, epoch 1); kOther
// (7002) a master of slots 100-16383 at epoch 2.
ClusterView ReplicaView() {
  ClusterView view = FreshView(7000, 17000, "127.0.0.1");
  view.me().id = kMe;
  view.me().flags = (view.me().flags & ~kNodeMaster) | kNodeSlave;
  view.me().master_id = kMaster;
  ClusterNode master = Peer(kMaster, 7001, kNodeMaster);
  master.config_epoch = 1;
  const int32_t m = view.Add(master);
  ClusterNode other = Peer(kOther, 7002, kNodeMaster);
  other.config_epoch = 2;
  const int32_t o = view.Add(other);
  for (size_t s = 0; s < kClusterSlots; ++s) view.owner[s] = s < 100 ? m : o;
  view.current_epoch = 2;
  view.RefreshHealth(true);
  return view;
}

TEST(FailoverRoles, TakeoverBumpsTheEpochAndTakesTheMastersSlots) {
  ClusterView view = ReplicaView();
  EXPECT_EQ(MyShardMaster(view), view.Find(kMaster));
  ASSERT_TRUE(view.BumpEpochWithoutConsensus());
  ASSERT_TRUE(ReplaceMyMaster(&view));
  EXPECT_EQ(view.me().config_epoch, 3u);
  EXPECT_TRUE(view.me().Has(kNodeMaster));
  EXPECT_FALSE(view.me().Has(kNodeSlave));
  EXPECT_TRUE(view.me().master_id.empty());
  EXPECT_EQ(view.SlotCount(view.myself), 100u);
  EXPECT_EQ(view.SlotCount(view.Find(kMaster)), 0u);
  EXPECT_EQ(view.SlotCount(view.Find(kOther)), 16284u);
  EXPECT_EQ(MyShardMaster(view), view.myself);
  // A master has no master to replace.
  EXPECT_FALSE(ReplaceMyMaster(&view));
}

TEST(FailoverRoles, AReplicaWithAnUnknownMasterReplacesNothing) {
  ClusterView view = ReplicaView();
  view.me().master_id = std::string(40, 'f');
  EXPECT_EQ(MyShardMaster(view), kNoNode);
  EXPECT_FALSE(ReplaceMyMaster(&view));
}

// The old master hears its replica's PING claiming its slots at a higher
// epoch: it becomes that node's replica; the receiver says its claim
// changed, so every peer hears it.
TEST(FailoverRoles, TheOldMasterFollowsTheReplicaThatTookItsSlots) {
  ClusterView promoted = ReplicaView();
  promoted.BumpEpochWithoutConsensus();
  ReplaceMyMaster(&promoted);

  // The old master's own view: myself kMaster with 0-99, kMe its replica.
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
  old.RefreshHealth(true);

  const BusMessage ping = DescribeMyself(promoted, BusMessageType::kPing, "");
  BusLinkContext link{"127.0.0.1", "127.0.0.1", "", false};
  const BusReceiveResult result = ApplyBusMessage(&old, ping, link, kNow, nullptr);
  EXPECT_TRUE(result.my_claim_changed);
  EXPECT_TRUE(result.save);
  EXPECT_TRUE(old.me().Has(kNodeSlave));
  EXPECT_FALSE(old.me().Has(kNodeMaster));
  EXPECT_EQ(old.me().master_id, kMe);
  EXPECT_EQ(old.SlotCount(old.Find(kMe)), 100u);
  EXPECT_TRUE(old.nodes[static_cast<size_t>(old.Find(kMe))].Has(kNodeMaster));
}

// A sibling replica of the old master follows the new one too.
TEST(FailoverRoles, ASiblingReplicaFollowsTheNewMaster) {
  ClusterView promoted = ReplicaView();
  promoted.BumpEpochWithoutConsensus();
  ReplaceMyMaster(&promoted);

  ClusterView sibling = ReplicaView();
  sibling.me().id = std::string(40, 'd');
  sibling.me().port = 7003;
  sibling.Add(Peer(kMe, 7000, kNodeSlave));
  sibling.nodes.back().master_id = kMaster;
  const BusMessage ping = DescribeMyself(promoted, BusMessageType::kPing, "");
  BusLinkContext link{"127.0.0.1", "127.0.0.1", "", false};
  ApplyBusMessage(&sibling, ping, link, kNow, nullptr);
  EXPECT_TRUE(sibling.me().Has(kNodeSlave));
  EXPECT_EQ(sibling.me().master_id, kMe);
}

// A master emptied by a reshard toward a node holding other slots stays a
// master when cluster-allow-replica-migration is off (Redis's rule), and
// becomes that node's replica when it is on.
TEST(FailoverRoles, AnEmptiedMasterFollowsTheTakerOnlyWithReplicaMigration) {
  for (const bool allow : {false, true}) {
    ClusterView view = FreshView(7001, 17001, "127.0.0.1");
    view.me().id = kMaster;
    view.me().config_epoch = 1;
    ClusterNode other = Peer(kOther, 7002, kNodeMaster);
    other.config_epoch = 1;
    const int32_t o = view.Add(other);
    for (size_t s = 0; s < kClusterSlots; ++s) view.owner[s] = s < 100 ? view.myself : o;
    const int32_t shard = MyShardMaster(view);
    // kOther took 0-99 at a higher epoch, and holds the rest.
    for (size_t s = 0; s < 100; ++s) view.owner[s] = o;
    EXPECT_EQ(FollowNewSlotOwner(&view, o, shard, 100, kClusterSlots, allow), allow);
    EXPECT_EQ(view.me().Has(kNodeSlave), allow);
  }
}

}  // namespace
}  // namespace failover_roles_test
}  // namespace bloomgate
