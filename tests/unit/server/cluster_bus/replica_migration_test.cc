// Replica migration tick by tick over a hand-built view: a master left
// without a working replica gets one, after Redis's delay, from the master
// with the most replicas, if it keeps more than the barrier; the replica
// with the smallest id goes; nothing moves with migration off, with the
// cluster down, or toward a master that never had a replica.
#include "server/cluster_bus/replica_migration.h"

#include <gtest/gtest.h>

#include "../cluster_peer.h"

namespace bloomgate {
namespace replica_migration_test {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;
const std::string kM1(40, '1');
const std::string kM2(40, '2');
const std::string kR1(40, 'a');  // replica of M1, the smallest replica id
const std::string kR2(40, 'b');  // replica of M1
const std::string kR3(40, 'c');  // replica of M2

ClusterNode Node(const std::string& id, uint16_t port, const std::string& master) {
  ClusterNode node = testing::MasterPeer(id, port);
  if (!master.empty()) node.flags = kNodeSlave;
  node.master_id = master;
  return node;
}

// The view of replica `me` (one of R1, R2, R3): M1 (slots 0-8191) with R1
// and R2, M2 (8192-16383) with R3.
ClusterView View(const std::string& me) {
  ClusterView view;
  const std::vector<ClusterNode> nodes = {Node(kM1, 7001, ""), Node(kM2, 7002, ""),
                                          Node(kR1, 7003, kM1), Node(kR2, 7004, kM1),
                                          Node(kR3, 7005, kM2)};
  for (const ClusterNode& node : nodes) {
    const int32_t index = view.Add(node);
    if (node.id == me) view.myself = index;
  }
  view.me().flags |= kNodeMyself;
  for (size_t s = 0; s < kClusterSlots; ++s) view.owner[s] = s < 8192 ? 0 : 1;
  view.RefreshHealth(true);
  return view;
}

void FailR3(ClusterView* view) {
  view->nodes[static_cast<size_t>(view->Find(kR3))].flags |= kNodeFail;
  view->RefreshHealth(true);
}

TEST(ReplicaMigration, TheSmallestSpareReplicaMovesAfterTheDelay) {
  ClusterView view = View(kR1);
  ReplicaMigrationMemory memory;
  // M2 has its replica: nobody is orphaned.
  EXPECT_EQ(ReplicaMigrationTarget(view, 1, true, kNow, &memory), kNoNode);
  FailR3(&view);
  EXPECT_EQ(ReplicaMigrationTarget(view, 1, true, kNow + 100, &memory), kNoNode);
  EXPECT_EQ(ReplicaMigrationTarget(view, 1, true, kNow + 5100, &memory), kNoNode);
  EXPECT_EQ(ReplicaMigrationTarget(view, 1, true, kNow + 5101, &memory), view.Find(kM2));
}

TEST(ReplicaMigration, OnlyTheCandidateMoves) {
  ClusterView view = View(kR2);
  ReplicaMigrationMemory memory;
  ReplicaMigrationTarget(view, 1, true, kNow, &memory);
  FailR3(&view);
  ReplicaMigrationTarget(view, 1, true, kNow + 100, &memory);
  EXPECT_EQ(ReplicaMigrationTarget(view, 1, true, kNow + 6000, &memory), kNoNode);
}

TEST(ReplicaMigration, TheBarrierKeepsReplicasHome) {
  ClusterView view = View(kR1);
  ReplicaMigrationMemory memory;
  ReplicaMigrationTarget(view, 2, true, kNow, &memory);
  FailR3(&view);
  ReplicaMigrationTarget(view, 2, true, kNow + 100, &memory);
  EXPECT_EQ(ReplicaMigrationTarget(view, 2, true, kNow + 6000, &memory), kNoNode);
  // A replica of M1 suspected (fail?) leaves it at the barrier of 1 too.
  view.nodes[static_cast<size_t>(view.Find(kR2))].flags |= kNodePFail;
  EXPECT_EQ(ReplicaMigrationTarget(view, 1, true, kNow + 6100, &memory), kNoNode);
  view.nodes[static_cast<size_t>(view.Find(kR2))].flags &= ~kNodePFail;
  EXPECT_EQ(ReplicaMigrationTarget(view, 1, true, kNow + 6200, &memory), view.Find(kM2));
}

TEST(ReplicaMigration, OffDownOrNeverReplicatedMeansNoMove) {
  ClusterView view = View(kR1);
  ReplicaMigrationMemory memory;
  ReplicaMigrationTarget(view, 1, true, kNow, &memory);
  FailR3(&view);
  ReplicaMigrationTarget(view, 1, true, kNow + 100, &memory);
  EXPECT_EQ(ReplicaMigrationTarget(view, 1, /*allow=*/false, kNow + 6000, &memory), kNoNode);
  view.state_ok = false;
  EXPECT_EQ(ReplicaMigrationTarget(view, 1, true, kNow + 6000, &memory), kNoNode);
  // M2 never seen with a replica (R3 was a replica of M1 all along, and
  // failed): not an orphan.
  ClusterView fresh = View(kR1);
  fresh.nodes[static_cast<size_t>(fresh.Find(kR3))].master_id = kM1;
  ReplicaMigrationMemory other;
  ReplicaMigrationTarget(fresh, 1, true, kNow, &other);
  EXPECT_EQ(ReplicaMigrationTarget(fresh, 1, true, kNow + 6000, &other), kNoNode);
}

}  // namespace
}  // namespace replica_migration_test
}  // namespace bloomgate
