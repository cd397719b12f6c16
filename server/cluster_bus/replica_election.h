// Redis Cluster's replica election, pure over a ClusterView and the times
// the caller passes (no sockets, no clock reads), as bus_receiver is:
//
//   the master's side: the vote (cluster.c's clusterSendFailoverAuthIfNeeded)
//   the replica's side: the election (clusterHandleSlaveFailover, with
//     clusterGetSlaveRank), run by the bus's 100 ms cron
//   winning: myself takes its master's place (clusterFailoverReplaceYourMaster)
//
// The numbers are Redis's: an election starts 500 ms + random(0..500) ms +
// rank x 1 s after the master is flagged fail (rank: replicas of the same
// master with a greater replication offset), lasts max(2 x node timeout,
// 2 s) and is tried again after twice that; it is won with the votes of a
// majority of the masters serving slots, (cluster size / 2) + 1.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "server/cluster/cluster_state.h"
#include "server/cluster_bus/bus_message.h"

namespace bloomgate {

// Why a master does not vote for a replica's AUTH_REQUEST, in the order
// Redis checks (kGranted: it votes).
enum class VoteRefusal {
  kGranted,
  kNotAVoter,          // myself is a replica, or a master serving no slot
  kUnknownRequester,   // the requester is not in the view
  kStaleEpoch,         // the request's currentEpoch is below ours
  kAlreadyVoted,       // lastVoteEpoch is currentEpoch already
  kRequesterIsMaster,  // the requester is a master in our view
  kUnknownMaster,      // its master is not in our view
  kMasterNotFailing,   // its master is not flagged fail (and no FORCEACK)
  kVotedRecently,      // we voted for a replica of that master < 2 x node timeout ago
  kStaleSlotClaim,     // a slot it claims has an owner of a higher config epoch
};
const char* ToString(VoteRefusal refusal);

// Redis's clusterSendFailoverAuthIfNeeded's checks on `request` (an
// AUTH_REQUEST whose currentEpoch the view has already taken up, as
// ReceiveBusMessage does): whether myself votes for its sender now.
VoteRefusal DecideFailoverVote(const ClusterView& view, const BusMessage& request, int64_t now_ms,
                               int64_t node_timeout_ms);

// Decides and, when granted, records the vote: lastVoteEpoch becomes
// currentEpoch (saved durably by ClusterState::Update before it returns:
// the AUTH_ACK is sent only after) and the requester's master remembers
// the time (no other replica of it gets a vote for 2 x node timeout).
VoteRefusal CastFailoverVote(ClusterView* view, const BusMessage& request, int64_t now_ms,
                             int64_t node_timeout_ms);

// Replicas of myself's master, other than myself and those flagged
// nofailover, whose last gossiped replication offset is greater than
// `my_offset` (Redis's clusterGetSlaveRank); 0 when myself has no master.
int ReplicaRank(const ClusterView& view, int64_t my_offset);

// The votes that win: a majority of the masters serving slots.
size_t ElectionQuorum(int32_t cluster_size);

// Redis's failover timeout, max(2 x node timeout, 2000) ms: how long an
// election waits for its votes; a new one starts twice that after it.
int64_t ElectionTimeoutMs(int64_t node_timeout_ms);

// Myself takes its master's place (Redis's clusterFailoverReplaceYourMaster,
// the view's half): a master with no master, owner of every slot its old
// master owned, at config epoch `election_epoch` (if higher than its own).
// The old master stays in the view as a master with no slots. False (the
// view unchanged) when myself is not a replica of a known master.
bool ReplaceMyMaster(ClusterView* view, uint64_t election_epoch);

// Redis's clusterUpdateSlotsConfigWith's role switch, after a claim of
// `claimer` at a higher config epoch took slots: when the claim took at
// least one slot of myself's shard (myself if a master, else its master;
// `took_from_my_shard`) and that shard has no slot left, myself becomes a
// replica of the claimer (a failed-over master that came back; or a
// replica whose master was failed over). A master that becomes a replica
// drops its importing/migrating marks. Whether the view changed.
bool FollowClaimerIfShardEmptied(ClusterView* view, int32_t claimer, bool took_from_my_shard);

// A replica's settings and link age, read each cron tick (main.cc gives
// them through ClusterBusOptions::election_settings).
struct ElectionSettings {
  // cluster-replica-validity-factor: 0 = data of any age may be promoted.
  uint64_t validity_factor = 10;
  // cluster-replica-no-failover: this replica never starts an election of
  // its own (a manual failover still may); shown as its nofailover flag.
  bool no_failover = false;
  // repl-ping-replica-period, in ms.
  int64_t repl_ping_period_ms = 10'000;
  // ms since the replication link last heard its master (while the link
  // is up) or since it went down (Redis's data age).
  int64_t data_age_ms = 0;
};

// What the caller reads each cron tick for the replica's side.
struct ElectionInputs {
  int64_t now_ms = 0;
  int64_t node_timeout_ms = 15'000;
  // myself's replication offset (what it applied of its master's stream).
  int64_t my_offset = 0;
  // ms since the replication link last heard its master (while the link
  // is up) or since it went down (Redis's data age).
  int64_t data_age_ms = 0;
  // repl-ping-replica-period, in ms.
  int64_t repl_ping_period_ms = 10'000;
  // cluster-replica-validity-factor: 0 = data of any age may be promoted.
  uint64_t validity_factor = 10;
  // cluster-replica-no-failover.
  bool no_failover = false;
  // random(0..500) ms, drawn by the caller.
  int64_t random_delay_ms = 0;
};

// What the caller does after a tick.
enum class ElectionAction {
  kNone,
  // An election was scheduled: tell the other replicas of the same master
  // this node's offset now (a PONG), so they rank themselves against it.
  kScheduled,
  // Bump currentEpoch in the view (saved durably), call VotesRequested with
  // it, and send AUTH_REQUEST (FORCEACK when manual()) to every node.
  kRequestVotes,
  // Won: ReplaceMyMaster(view, epoch()), stop following the old master,
  // PONG every node at once, then Finish().
  kPromote,
};

// Why a replica whose master needs replacing is not in an election now
// (Redis's cant_failover_reason), for the log.
enum class ElectionWait {
  kNone,
  kDataTooOld,
  kWaitingDelay,
  kExpired,
  kWaitingVotes,
};

// The replica's side, owned by the bus's thread.
class ReplicaElection {
 public:
  // One 100 ms cron step of Redis's clusterHandleSlaveFailover.
  ElectionAction Tick(const ClusterView& view, const ElectionInputs& in);

  // The AUTH_REQUESTs go out for `epoch` (the bumped currentEpoch).
  void VotesRequested(uint64_t epoch);
  // An AUTH_ACK from `voter`, a master serving slots, whose currentEpoch
  // is `voter_epoch`: counted once per voter when it is this election's.
  void OnAck(std::string_view voter, uint64_t voter_epoch);
  // The election is over (won): the next one starts from scratch.
  void Finish();

  // A manual failover's election (CLUSTER FAILOVER, ClusterBus's
  // StartManualElection): the next Tick requests votes at once with
  // FORCEACK, whatever the master's state, cluster-replica-no-failover and
  // the data's age, until `deadline_ms` (then it stops being manual).
  void StartManual(int64_t deadline_ms);

  bool manual() const { return manual_deadline_ms_ != 0; }
  uint64_t epoch() const { return epoch_; }
  int rank() const { return rank_; }
  int64_t auth_time_ms() const { return auth_time_ms_; }
  bool requested() const { return requested_; }
  size_t votes() const { return voters_.size(); }
  ElectionWait wait() const { return wait_; }

 private:
  // When the election starts (Redis's failover_auth_time); 0 = never scheduled.
  int64_t auth_time_ms_ = 0;
  int rank_ = 0;
  bool requested_ = false;  // failover_auth_sent
  uint64_t epoch_ = 0;      // failover_auth_epoch
  std::set<std::string, std::less<>> voters_;
  int64_t manual_deadline_ms_ = 0;  // 0: no manual failover under way
  ElectionWait wait_ = ElectionWait::kNone;
};

}  // namespace bloomgate
