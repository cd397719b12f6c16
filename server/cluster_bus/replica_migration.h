// Replica migration (Redis 7.0's clusterHandleSlaveMigration and its part
// of clusterCron): a master serving slots that had replicas and has no
// working one left (orphaned) gets a spare replica from a master with the
// most working replicas, if that master keeps more than
// cluster-migration-barrier of them; of those masters' replicas, the one
// with the smallest node id goes. Pure over the view, a clock and what the
// bus remembers between ticks (which masters ever had a replica, since
// when each is orphaned), so the tests drive it tick by tick.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "server/cluster/cluster_state.h"

namespace bloomgate {

// Redis's CLUSTER_SLAVE_MIGRATION_DELAY: a master must stay orphaned this
// long before a replica migrates to it (its own replicas, during a
// failover, get the time to say whom they follow now).
inline constexpr int64_t kReplicaMigrationDelayMs = 5000;

struct ReplicaMigrationMemory {
  // Masters seen with a replica (Redis's CLUSTER_NODE_MIGRATE_TO): only
  // those were meant to have one, so only those count as orphaned.
  std::set<std::string> had_replicas;
  // Orphaned masters and since when (unix ms).
  std::map<std::string, int64_t> orphaned_since_ms;
};

// One cron tick of a node: updates `memory` from the view and returns the
// index of the master myself should replicate now, or kNoNode. Only a
// replica migrates, with the state ok, `allow` (cluster-allow-replica-
// migration) set, and its master keeping more than `barrier` replicas
// that are not failing.
int32_t ReplicaMigrationTarget(const ClusterView& view, uint32_t barrier, bool allow,
                               int64_t now_ms, ReplicaMigrationMemory* memory);

}  // namespace bloomgate
