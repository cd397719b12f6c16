#include "server/cluster_bus/manual_failover.h"

namespace bloomgate {

bool ManualFailover::StartOnReplica(bool force, int64_t now_ms) {
  const bool unpause = Reset();
  end_ms_ = now_ms + kManualFailoverTimeoutMs;
  can_start_ = force;
  return unpause;
}

int64_t ManualFailover::StartOnMaster(const std::string& replica_id, int64_t now_ms) {
  Reset();
  end_ms_ = now_ms + kManualFailoverTimeoutMs;
  replica_id_ = replica_id;
  paused_at_ms_ = now_ms;
  return now_ms + kManualFailoverPauseMult * kManualFailoverTimeoutMs;
}

void ManualFailover::OnMasterPaused(uint64_t master_offset) {
  if (end_ms_ == 0 || !replica_id_.empty() || master_offset_ != -1) return;
  master_offset_ = static_cast<int64_t>(master_offset);
}

bool ManualFailover::Reset() {
  const bool unpause = !replica_id_.empty();
  end_ms_ = 0;
  can_start_ = false;
  election_asked_ = false;
  master_offset_ = -1;
  replica_id_.clear();
  paused_at_ms_ = 0;
  return unpause;
}

ManualFailover::Step ManualFailover::Tick(int64_t now_ms, bool i_am_master,
                                          uint64_t applied_offset) {
  Step step;
  if (end_ms_ == 0) return step;
  // Redis's manualFailoverCheckTimeout.
  if (end_ms_ < now_ms) {
    step.timed_out = true;
    step.unpause_writes = Reset();
    return step;
  }
  const bool master_side = !replica_id_.empty();
  if (master_side != i_am_master) {
    // The failover happened: the paused master is a replica now (or the
    // replica a master). Nothing left to do; the pause ends.
    step.unpause_writes = Reset();
    return step;
  }
  if (master_side) return step;
  // Redis's clusterHandleManualFailover: the replica has applied all its
  // paused master wrote.
  if (!can_start_ && master_offset_ != -1 &&
      applied_offset == static_cast<uint64_t>(master_offset_)) {
    can_start_ = true;
  }
  if (can_start_ && !election_asked_) {
    election_asked_ = true;
    step.start_election = true;
  }
  return step;
}

}  // namespace bloomgate
