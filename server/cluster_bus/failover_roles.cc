#include "server/cluster_bus/failover_roles.h"

namespace bloomgate {

int32_t MyShardMaster(const ClusterView& view) {
  if (view.me().Has(kNodeMaster)) return view.myself;
  return view.MasterOf(view.myself);
}

bool ReplaceMyMaster(ClusterView* view) {
  const int32_t master = view->MasterOf(view->myself);
  if (view->me().Has(kNodeMaster) || master == kNoNode) return false;
  ClusterNode& me = view->me();
  me.flags = (me.flags & ~kNodeSlave) | kNodeMaster;
  me.master_id.clear();
  for (int32_t& owner : view->owner) {
    if (owner == master) owner = view->myself;
  }
  return true;
}

bool FollowNewSlotOwner(ClusterView* view, int32_t claimer, int32_t shard_master,
                        size_t shard_slots_before, size_t claimer_slots,
                        bool allow_replica_migration) {
  if (shard_master == kNoNode || claimer == view->myself || shard_slots_before == 0) return false;
  if (view->SlotCount(shard_master) != 0) return false;
  // Every slot the shard lost went to the claimer: it is the shard's new
  // master only if it holds nothing else, or replicas may migrate.
  const size_t from_shard = shard_slots_before;
  if (!allow_replica_migration && claimer_slots != from_shard) return false;
  ClusterNode& me = view->me();
  const ClusterNode& owner = view->nodes[static_cast<size_t>(claimer)];
  if (me.Has(kNodeSlave) && me.master_id == owner.id) return false;
  me.flags = (me.flags & ~kNodeMaster) | kNodeSlave;
  me.master_id = owner.id;
  view->importing_from.fill(kNoNode);
  view->migrating_to.fill(kNoNode);
  return true;
}

}  // namespace bloomgate
