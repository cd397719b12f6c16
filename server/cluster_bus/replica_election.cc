#include "server/cluster_bus/replica_election.h"

#include <algorithm>

namespace bloomgate {
namespace {

// Redis's fixed part of the election delay: the FAIL message reaches every
// node first (the random part, 0..500 ms, spreads replicas of equal rank).
constexpr int64_t kElectionFixedDelayMs = 500;
// Each replica ahead of myself in offset delays myself by this much more.
constexpr int64_t kElectionRankDelayMs = 1000;
// Redis's floor of the failover timeout.
constexpr int64_t kMinElectionTimeoutMs = 2000;

}  // namespace

const char* ToString(VoteRefusal refusal) {
  switch (refusal) {
    case VoteRefusal::kGranted: return "granted";
    case VoteRefusal::kNotAVoter: return "I am not a master serving slots";
    case VoteRefusal::kUnknownRequester: return "I don't know the requester";
    case VoteRefusal::kStaleEpoch: return "its request epoch is below my current epoch";
    case VoteRefusal::kAlreadyVoted: return "I already voted for this epoch";
    case VoteRefusal::kRequesterIsMaster: return "it is a master node";
    case VoteRefusal::kUnknownMaster: return "I don't know its master";
    case VoteRefusal::kMasterNotFailing: return "its master is up";
    case VoteRefusal::kVotedRecently: return "I voted for a replica of its master lately";
    case VoteRefusal::kStaleSlotClaim: return "a slot it claims has an owner of a higher epoch";
  }
  return "unknown";
}

VoteRefusal DecideFailoverVote(const ClusterView& view, const BusMessage& request, int64_t now_ms,
                               int64_t node_timeout_ms) {
  // Only the masters that make up the cluster's size vote: the quorum is
  // counted among them.
  const ClusterNode& me = view.me();
  if (!me.Has(kNodeMaster) || view.SlotCount(view.myself) == 0) return VoteRefusal::kNotAVoter;
  const int32_t requester = view.Find(request.sender_id);
  if (requester == kNoNode) return VoteRefusal::kUnknownRequester;
  // The view took up the request's epoch when it was higher: below means
  // an election this node has seen superseded.
  if (request.current_epoch < view.current_epoch) return VoteRefusal::kStaleEpoch;
  if (view.last_vote_epoch == view.current_epoch) return VoteRefusal::kAlreadyVoted;
  const ClusterNode& node = view.nodes[static_cast<size_t>(requester)];
  if (node.Has(kNodeMaster)) return VoteRefusal::kRequesterIsMaster;
  const int32_t master = view.MasterOf(requester);
  if (master == kNoNode) return VoteRefusal::kUnknownMaster;
  const ClusterNode& failing = view.nodes[static_cast<size_t>(master)];
  if (!failing.Has(kNodeFail) && (request.message_flags & kBusMessageForceAck) == 0) {
    return VoteRefusal::kMasterNotFailing;
  }
  // Not needed for safety (the epoch is), but one replica of a master at a
  // time keeps the elections of its replicas from splitting the votes.
  if (now_ms - failing.voted_time_ms < 2 * node_timeout_ms) return VoteRefusal::kVotedRecently;
  const BusSlotBitmap& claimed = request.slots;
  for (size_t slot = claimed._Find_first(); slot < claimed.size();
       slot = claimed._Find_next(slot)) {
    const int32_t owner = view.owner[slot];
    if (owner != kNoNode &&
        view.nodes[static_cast<size_t>(owner)].config_epoch > request.config_epoch) {
      return VoteRefusal::kStaleSlotClaim;
    }
  }
  return VoteRefusal::kGranted;
}

VoteRefusal CastFailoverVote(ClusterView* view, const BusMessage& request, int64_t now_ms,
                             int64_t node_timeout_ms) {
  const VoteRefusal refusal = DecideFailoverVote(*view, request, now_ms, node_timeout_ms);
  if (refusal != VoteRefusal::kGranted) return refusal;
  view->last_vote_epoch = view->current_epoch;
  const int32_t master = view->MasterOf(view->Find(request.sender_id));
  view->nodes[static_cast<size_t>(master)].voted_time_ms = now_ms;
  return refusal;
}

int ReplicaRank(const ClusterView& view, int64_t my_offset) {
  const int32_t master = view.MasterOf(view.myself);
  if (master == kNoNode) return 0;
  const std::string& master_id = view.nodes[static_cast<size_t>(master)].id;
  int rank = 0;
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    const ClusterNode& node = view.nodes[i];
    if (static_cast<int32_t>(i) == view.myself || !node.Has(kNodeSlave) ||
        node.Has(kNodeNoFailover) || node.master_id != master_id) {
      continue;
    }
    if (node.repl_offset > my_offset) ++rank;
  }
  return rank;
}

size_t ElectionQuorum(int32_t cluster_size) {
  return static_cast<size_t>(std::max(cluster_size, 0) / 2 + 1);
}

int64_t ElectionTimeoutMs(int64_t node_timeout_ms) {
  return std::max(2 * node_timeout_ms, kMinElectionTimeoutMs);
}

bool ReplaceMyMaster(ClusterView* view, uint64_t election_epoch) {
  const int32_t master = view->MasterOf(view->myself);
  if (master == kNoNode) return false;
  ClusterNode& me = view->me();
  me.flags = (me.flags & ~kNodeSlave) | kNodeMaster;
  me.master_id.clear();
  for (int32_t& owner : view->owner) {
    if (owner == master) owner = view->myself;
  }
  if (me.config_epoch < election_epoch) me.config_epoch = election_epoch;
  return true;
}

bool FollowClaimerIfShardEmptied(ClusterView* view, int32_t claimer, bool took_from_my_shard) {
  if (!took_from_my_shard || claimer == kNoNode || claimer == view->myself) return false;
  const bool i_am_master = view->me().Has(kNodeMaster);
  const int32_t shard = i_am_master ? view->myself : view->MasterOf(view->myself);
  if (shard == kNoNode || view->SlotCount(shard) != 0) return false;
  const std::string& claimer_id = view->nodes[static_cast<size_t>(claimer)].id;
  ClusterNode& me = view->me();
  if (!i_am_master && me.master_id == claimer_id) return false;
  if (i_am_master) {
    // Redis's clusterCloseAllSlots: a replica has no open slots.
    view->importing_from.fill(kNoNode);
    view->migrating_to.fill(kNoNode);
  }
  me.flags = (me.flags & ~kNodeMaster) | kNodeSlave;
  me.master_id = claimer_id;
  return true;
}

ElectionAction ReplicaElection::Tick(const ClusterView& view, const ElectionInputs& in) {
  wait_ = ElectionWait::kNone;
  if (manual_deadline_ms_ != 0 && in.now_ms > manual_deadline_ms_) manual_deadline_ms_ = 0;
  const bool is_manual = manual();
  const int32_t master = view.MasterOf(view.myself);
  if (!view.me().Has(kNodeSlave) || master == kNoNode) return ElectionAction::kNone;
  if ((!view.nodes[static_cast<size_t>(master)].Has(kNodeFail) && !is_manual) ||
      (in.no_failover && !is_manual) || view.SlotCount(master) == 0) {
    return ElectionAction::kNone;
  }

  const int64_t timeout = ElectionTimeoutMs(in.node_timeout_ms);
  const int64_t retry = 2 * timeout;
  const int64_t auth_age = in.now_ms - auth_time_ms_;

  // Being cut off from the master while it was being found failing is the
  // baseline: only the time beyond the node timeout counts.
  int64_t data_age = in.data_age_ms;
  if (data_age > in.node_timeout_ms) data_age -= in.node_timeout_ms;
  if (in.validity_factor != 0 && !is_manual &&
      data_age > in.repl_ping_period_ms +
                     in.node_timeout_ms * static_cast<int64_t>(in.validity_factor)) {
    wait_ = ElectionWait::kDataTooOld;
    return ElectionAction::kNone;
  }

  if (auth_age > retry) {
    requested_ = false;
    voters_.clear();
    if (is_manual) {
      auth_time_ms_ = in.now_ms;
      rank_ = 0;
    } else {
      rank_ = ReplicaRank(view, in.my_offset);
      auth_time_ms_ = in.now_ms + kElectionFixedDelayMs + in.random_delay_ms +
                      rank_ * kElectionRankDelayMs;
    }
    return ElectionAction::kScheduled;
  }

  // Offsets heard since the schedule may put other replicas ahead: wait
  // longer (never shorter) while the votes are not asked for yet.
  if (!requested_ && !is_manual) {
    const int rank = ReplicaRank(view, in.my_offset);
    if (rank > rank_) {
      auth_time_ms_ += (rank - rank_) * kElectionRankDelayMs;
      rank_ = rank;
    }
  }
  if (in.now_ms < auth_time_ms_) {
    wait_ = ElectionWait::kWaitingDelay;
    return ElectionAction::kNone;
  }
  if (auth_age > timeout) {
    wait_ = ElectionWait::kExpired;
    return ElectionAction::kNone;
  }
  if (!requested_) return ElectionAction::kRequestVotes;
  if (voters_.size() >= ElectionQuorum(view.size)) return ElectionAction::kPromote;
  wait_ = ElectionWait::kWaitingVotes;
  return ElectionAction::kNone;
}

void ReplicaElection::VotesRequested(uint64_t epoch) {
  epoch_ = epoch;
  requested_ = true;
  voters_.clear();
}

void ReplicaElection::OnAck(std::string_view voter, uint64_t voter_epoch) {
  if (!requested_ || voter_epoch < epoch_) return;
  voters_.emplace(voter);
}

void ReplicaElection::Finish() {
  requested_ = false;
  voters_.clear();
  manual_deadline_ms_ = 0;
  wait_ = ElectionWait::kNone;
}

void ReplicaElection::StartManual(int64_t deadline_ms) {
  manual_deadline_ms_ = std::max<int64_t>(deadline_ms, 1);
  // Scheduled afresh at the next tick, whatever an automatic attempt left
  // (never scheduled: its age is the whole clock).
  auth_time_ms_ = 0;
  requested_ = false;
  voters_.clear();
}

}  // namespace bloomgate
