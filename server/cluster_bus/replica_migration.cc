#include "server/cluster_bus/replica_migration.h"

#include <algorithm>
#include <vector>

namespace bloomgate {
namespace {

// Redis's nodeFailed/nodeTimedOut: flagged fail, or suspected (fail?).
bool Failing(const ClusterNode& node) { return node.Has(kNodeFail) || node.Has(kNodePFail); }

}  // namespace

int32_t ReplicaMigrationTarget(const ClusterView& view, uint32_t barrier, bool allow,
                               int64_t now_ms, ReplicaMigrationMemory* memory) {
  const size_t count = view.nodes.size();
  // Each master's replicas, and how many are working (Redis's
  // clusterCountNonFailingSlaves: not flagged fail).
  std::vector<std::vector<int32_t>> replicas(count);
  std::vector<uint32_t> working(count, 0);
  for (size_t i = 0; i < count; ++i) {
    const int32_t master = view.MasterOf(static_cast<int32_t>(i));
    if (master == kNoNode) continue;
    replicas[static_cast<size_t>(master)].push_back(static_cast<int32_t>(i));
    if (!view.nodes[i].Has(kNodeFail)) ++working[static_cast<size_t>(master)];
  }
  std::vector<size_t> slots(count, 0);
  for (int32_t owner : view.owner) {
    if (owner != kNoNode) ++slots[static_cast<size_t>(owner)];
  }

  uint32_t max_working = 0;
  bool any_orphan = false;
  int32_t target = kNoNode;
  for (size_t i = 0; i < count; ++i) {
    const ClusterNode& node = view.nodes[i];
    if (!replicas[i].empty()) memory->had_replicas.insert(node.id);
    const bool master = node.Has(kNodeMaster);
    const bool orphaned = master && !node.Has(kNodeFail) && working[i] == 0 &&
                          memory->had_replicas.count(node.id) != 0;
    if (orphaned) {
      memory->orphaned_since_ms.emplace(node.id, now_ms);
      if (target == kNoNode && slots[i] > 0) target = static_cast<int32_t>(i);
      if (slots[i] > 0) any_orphan = true;
    } else {
      memory->orphaned_since_ms.erase(node.id);
    }
    if (master && !node.Has(kNodeFail)) max_working = std::max(max_working, working[i]);
  }
  // Nodes that left the view are forgotten.
  std::erase_if(memory->had_replicas, [&](const std::string& id) { return view.Find(id) == kNoNode; });

  const int32_t my_master = view.MasterOf(view.myself);
  if (!allow || my_master == kNoNode || !any_orphan || max_working < 2) return kNoNode;
  if (working[static_cast<size_t>(my_master)] != max_working) return kNoNode;
  if (!view.state_ok) return kNoNode;
  // My master keeps more than the barrier of working replicas (Redis counts
  // them without the suspected ones here).
  uint32_t ok_replicas = 0;
  for (int32_t replica : replicas[static_cast<size_t>(my_master)]) {
    if (!Failing(view.nodes[static_cast<size_t>(replica)])) ++ok_replicas;
  }
  if (ok_replicas <= barrier) return kNoNode;
  // The candidate: of the replicas of the masters with the most working
  // ones, the smallest id.
  const std::string* candidate = &view.me().id;
  for (size_t i = 0; i < count; ++i) {
    if (!view.nodes[i].Has(kNodeMaster) || working[i] != max_working) continue;
    for (int32_t replica : replicas[i]) {
      const std::string& id = view.nodes[static_cast<size_t>(replica)].id;
      if (id < *candidate) candidate = &id;
    }
  }
  if (*candidate != view.me().id || target == kNoNode) return kNoNode;
  const int64_t since = memory->orphaned_since_ms[view.nodes[static_cast<size_t>(target)].id];
  if (now_ms - since <= kReplicaMigrationDelayMs) return kNoNode;
  return target;
}

}  // namespace bloomgate
