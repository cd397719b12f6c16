// The role changes of a failover, as view changes (Redis 7.0's cluster.c):
// a replica taking its master's place (clusterFailoverReplaceYourMaster's
// view half: CLUSTER FAILOVER TAKEOVER), and a node following the master
// that took its shard's slots (clusterUpdateSlotsConfigWith's last step:
// an old master coming back, or a sibling replica, becomes a replica of
// the new owner). Pure over a ClusterView, like bus_receiver.
#pragma once

#include <cstddef>
#include <cstdint>

#include "server/cluster/cluster_state.h"

namespace bloomgate {

// Myself's master, or myself when myself is a master: whose slots myself
// serves or replicates (Redis's `curmaster`). kNoNode: a replica whose
// master is unknown.
int32_t MyShardMaster(const ClusterView& view);

// Myself, a replica of a known master, becomes a master holding every slot
// that master held (the master, in the view, keeps its role until it says
// otherwise). False (nothing changed) when myself is a master or its master
// is unknown. The caller bumps the epoch first (TAKEOVER) or won an
// election for it, and promotes replication.
bool ReplaceMyMaster(ClusterView* view);

// After `claimer`'s claim moved slots: when it took the last of the slots
// of myself's shard master (`shard_master`, who held `shard_slots_before`),
// myself becomes a replica of `claimer` (Redis's clusterSetMaster), unless
// cluster-allow-replica-migration is off and the claimer holds slots that
// did not come from this shard (`claimer_slots`: the slots it claims; a
// master emptied by a reshard then stays an empty master). Whether myself
// changed.
bool FollowNewSlotOwner(ClusterView* view, int32_t claimer, int32_t shard_master,
                        size_t shard_slots_before, size_t claimer_slots,
                        bool allow_replica_migration);

}  // namespace bloomgate
