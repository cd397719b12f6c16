// CLUSTER FAILOVER's handshake (Redis 7.0's manual failover: mf_end,
// mf_slave, mf_master_offset, mf_can_start), pure over a clock and the
// offsets it is given, so the tests drive it step by step. The bus's loop
// owns one and asks it at each cron tick and message.
//
//   replica                                   master
//   CLUSTER FAILOVER: Start, MFSTART  ------>  OnMfStart: writes paused for
//                                              2 x kManualFailoverTimeoutMs
//           <------  PING/PONG, PAUSED flag + the master's offset
//   OnMasterPaused: the offset to reach
//   Tick: applied it? the election starts,
//   with FORCEACK (the masters vote though
//   the master is not failing)
//   the new owner's claim  ----------------->  a replica of it (bus_receiver):
//                                              Tick resets, writes unpaused
//
// FORCE skips the master: the election may start at once. Whatever is
// not done by the deadline (kManualFailoverTimeoutMs after the start) is
// given up and reset; a master then unpauses its writes.
#pragma once

#include <cstdint>
#include <string>

namespace bloomgate {

// Redis's CLUSTER_MF_TIMEOUT: the whole manual failover's deadline.
inline constexpr int64_t kManualFailoverTimeoutMs = 5000;
// Redis's CLUSTER_MF_PAUSE_MULT: a master pauses writes for twice that.
inline constexpr int64_t kManualFailoverPauseMult = 2;
// A master says PAUSED only this long after it paused writes: a write that
// passed the pause check on another thread just before it took effect is
// in the offset sent (Redis, single-threaded, needs no wait). A cron tick.
inline constexpr int64_t kManualFailoverPauseSettleMs = 100;

class ManualFailover {
 public:
  // What a cron tick asks the bus to do.
  struct Step {
    bool unpause_writes = false;  // a master's pause ends (reset or timeout)
    bool start_election = false;  // the replica may start its election now
    bool timed_out = false;       // the deadline passed: given up (logged)
  };

  // CLUSTER FAILOVER [FORCE] on a replica: any earlier one is reset (and
  // its pause, if myself was the paused master, is to be lifted: the return
  // value), the deadline set; FORCE may start the election at once.
  bool StartOnReplica(bool force, int64_t now_ms);
  // MFSTART from `replica_id`, a replica of myself, a master: any earlier
  // one reset, writes are to be paused until the returned end (unix ms).
  int64_t StartOnMaster(const std::string& replica_id, int64_t now_ms);
  // A PING/PONG from myself's master with the PAUSED flag: the first one
  // of a failover in progress fixes the offset to reach.
  void OnMasterPaused(uint64_t master_offset);
  // Ends any failover in progress; true when myself was the paused master
  // (its writes are to be unpaused). Redis's resetManualFailover.
  bool Reset();

  // Each cron tick. `i_am_master`: myself's role in the view now;
  // `applied_offset`: myself's replication offset (a replica's applied
  // offset of its master's stream).
  Step Tick(int64_t now_ms, bool i_am_master, uint64_t applied_offset);

  bool in_progress() const { return end_ms_ != 0; }
  // Whether myself's messages carry the PAUSED flag (a master paused for a
  // replica's failover, settled).
  bool SaysPaused(int64_t now_ms) const {
    return end_ms_ != 0 && !replica_id_.empty() &&
           now_ms - paused_at_ms_ >= kManualFailoverPauseSettleMs;
  }
  // The replica's election may run (Redis's mf_can_start).
  bool can_start() const { return can_start_; }
  const std::string& replica_id() const { return replica_id_; }
  int64_t end_ms() const { return end_ms_; }

 private:
  int64_t end_ms_ = 0;          // 0: none in progress
  bool can_start_ = false;      // replica side
  bool election_asked_ = false; // replica side: start_election said once
  int64_t master_offset_ = -1;  // replica side: the paused master's offset
  std::string replica_id_;      // master side: who asked (Redis's mf_slave)
  int64_t paused_at_ms_ = 0;    // master side
};

}  // namespace bloomgate
