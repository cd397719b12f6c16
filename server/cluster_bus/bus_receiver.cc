#include "server/cluster_bus/bus_receiver.h"

#include <algorithm>
#include <type_traits>

#include "server/cluster_bus/bus_node_flags.h"
#include "server/cluster_bus/epoch_rules.h"
#include "server/cluster_bus/replica_election.h"

namespace bloomgate {
namespace {

bool IsMaster(const ClusterNode& node) { return node.Has(kNodeMaster); }

bool Full(const ClusterView& view) { return view.nodes.size() >= kMaxClusterNodes; }

// A node with no handshake under way toward ip:port (Redis's
// clusterHandshakeInProgress) and not known by id.
bool ShouldMeet(const ClusterView& view, const BusGossipEntry& entry) {
  if (view.Find(entry.id) != kNoNode) return false;
  for (const ClusterNode& node : view.nodes) {
    if (node.Has(kNodeHandshake) && node.ip == entry.ip && node.port == entry.port) return false;
  }
  return true;
}

// With cluster-allow-replica-migration off, myself follows a claimer that
// emptied its shard only when every slot the claimer claims came from that
// shard (Redis's clusterUpdateSlotsConfigWith: a master emptied by a
// reshard toward a node holding other slots stays an empty master).
// SlotsOfMyShardIfNeeded: what myself's shard holds before the claim (only
// counted when the setting is off).
size_t SlotsOfMyShardIfNeeded(const ClusterView& view, const BusLinkContext& link) {
  if (link.allow_replica_migration) return 0;
  const int32_t shard = view.me().Has(kNodeMaster) ? view.myself : view.MasterOf(view.myself);
  return shard == kNoNode ? 0 : view.SlotCount(shard);
}

bool MayFollowClaimer(const BusLinkContext& link, size_t shard_slots_before,
                      const BusSlotBitmap& claimed) {
  return link.allow_replica_migration || claimed.count() == shard_slots_before;
}

// Whether a claim on `slot` takes it from its owner; *stale_owner is set
// when the owner's higher epoch keeps it.
bool ClaimTakes(const ClusterView& view, int32_t claimer, uint64_t claim_epoch, size_t slot,
                int32_t* stale_owner) {
  const int32_t owner = view.owner[slot];
  if (owner == claimer) return false;
  // A slot being imported is this node's to settle (SETSLOT NODE).
  if (view.importing_from[slot] != kNoNode) return false;
  const uint64_t owner_epoch =
      owner == kNoNode ? 0 : view.nodes[static_cast<size_t>(owner)].config_epoch;
  if (SlotClaimWins(owner != kNoNode, owner_epoch, claim_epoch)) return true;
  if (owner_epoch > claim_epoch) *stale_owner = owner;
  return false;
}

// The const half of ApplySlotClaim: whether any slot would move, and the
// stale owner it would report.
bool SlotClaimMoves(const ClusterView& view, int32_t claimer, uint64_t claim_epoch,
                    const BusSlotBitmap& slots, int32_t* stale_owner) {
  *stale_owner = kNoNode;
  bool moves = false;
  for (size_t slot = slots._Find_first(); slot < slots.size(); slot = slots._Find_next(slot)) {
    moves |= ClaimTakes(view, claimer, claim_epoch, slot, stale_owner);
  }
  return moves;
}

// The node a PONG on our own link answers for when the sender's id is not
// in the view: the handshake node the link was opened toward, which takes
// the sender's id (Redis's clusterRenameNode). kNoNode: none.
int32_t HandshakeNodeOfLink(const ClusterView& view, const BusMessage& message,
                            const BusLinkContext& link) {
  if (message.type != BusMessageType::kPong || link.outbound_node_id.empty()) return kNoNode;
  const int32_t index = view.Find(link.outbound_node_id);
  if (index == kNoNode || !view.nodes[static_cast<size_t>(index)].Has(kNodeHandshake)) {
    return kNoNode;
  }
  return index;
}

// A PONG on our link toward a handshake node from a node known already
// (CLUSTER MEET of a member): the provisional node to remove (Redis deletes
// it the same way), or kNoNode.
int32_t StaleHandshakeOfLink(const ClusterView& view, const BusMessage& message,
                             const BusLinkContext& link) {
  if (message.type != BusMessageType::kPong || link.outbound_node_id.empty() ||
      link.outbound_node_id == message.sender_id) {
    return kNoNode;
  }
  const int32_t index = view.Find(link.outbound_node_id);
  if (index == kNoNode || index == view.myself ||
      !view.nodes[static_cast<size_t>(index)].Has(kNodeHandshake)) {
    return kNoNode;
  }
  return index;
}

// Redis's markNodeAsFailingIfNeeded: a node this node suspects (fail?)
// fails when its reports younger than twice the node timeout, plus
// myself's own suspicion when myself is a master, reach a majority of the
// masters serving slots.
bool ReachesFailQuorum(const ClusterView& view, int32_t index, int64_t now_ms,
                       int64_t node_timeout_ms) {
  const ClusterNode& node = view.nodes[static_cast<size_t>(index)];
  if (!node.Has(kNodePFail) || node.Has(kNodeFail)) return false;
  const int32_t quorum = view.size / 2 + 1;
  int32_t failures = view.me().Has(kNodeMaster) ? 1 : 0;
  for (const auto& [reporter, at] : node.failure_reports) {
    if (now_ms - at <= 2 * node_timeout_ms) ++failures;
  }
  return failures >= quorum;
}

// Redis's clearNodeFailureIfNeeded, for a failed node that answered: a
// replica, or a master with no slots, at once; a master serving slots once
// it has been failed for twice the node timeout (nobody took its slots).
bool FailureClears(const ClusterView& view, int32_t index, int64_t now_ms,
                   int64_t node_timeout_ms) {
  const ClusterNode& node = view.nodes[static_cast<size_t>(index)];
  if (!node.Has(kNodeFail)) return false;
  if (node.Has(kNodeSlave) || view.SlotCount(index) == 0) return true;
  return now_ms - node.fail_time_ms > 2 * node_timeout_ms;
}

// Myself's address as a peer sees it, learnt from a MEET (or any message
// while myself has none), unless cluster-announce-ip fixes it.
bool LearnsMyIp(const ClusterView& view, const BusMessage& message, const BusLinkContext& link) {
  if (link.announce_ip_set || link.local_ip.empty()) return false;
  const ClusterNode& me = view.me();
  if (message.type != BusMessageType::kMeet && !me.ip.empty()) return false;
  return me.ip != link.local_ip;
}

// Redis's clusterProcessPacket for PING, PONG, MEET and UPDATE over `View`:
// a ClusterView, changed in place, or a const one, where the walk stops at
// the first change it would make (result.changed) and otherwise gives the
// whole result of a message that changes nothing. Both walks take the same
// decisions, so the caller can decide under the shared lock and apply under
// the exclusive one.
template <typename View>
BusReceiveResult Process(View* view, const BusMessage& message, const BusLinkContext& link,
                         int64_t now_ms, const BusBanCheck& banned) {
  constexpr bool kApply = !std::is_const_v<View>;
  BusReceiveResult result;
  // In the const walk, a change ends it: the caller applies it for real.
  auto stop_here = [&result] {
    result.changed = true;
    return !kApply;
  };

  int32_t sender = view->Find(message.sender_id);
  if (sender == view->myself) {
    result.dropped = true;  // our own message looped back (a MEET toward ourselves)
    return result;
  }
  if (sender == kNoNode) {
    sender = HandshakeNodeOfLink(*view, message, link);
    if (sender != kNoNode) {
      if (stop_here()) return result;
      if constexpr (kApply) view->nodes[static_cast<size_t>(sender)].id = message.sender_id;
      result.save = true;
    }
  } else if (const int32_t stale = StaleHandshakeOfLink(*view, message, link); stale != kNoNode) {
    if (stop_here()) return result;
    if constexpr (kApply) {
      view->Remove(stale);
      sender = view->Find(message.sender_id);  // indices above the removed node moved
    }
  }

  if (LearnsMyIp(*view, message, link)) {
    if (stop_here()) return result;
    if constexpr (kApply) view->me().ip = link.local_ip;
    result.save = true;
  }

  if (sender == kNoNode) {
    if (message.type != BusMessageType::kMeet) {
      result.dropped = true;  // a node that was not met
      return result;
    }
    if (Full(*view)) {
      result.dropped = true;
      ++result.nodes_refused;
      return result;
    }
    if (stop_here()) return result;
    if constexpr (kApply) {
      ClusterNode node;
      node.id = message.sender_id;
      node.ip = message.sender_ip.empty() ? link.peer_ip : message.sender_ip;
      node.port = message.port;
      node.cport = message.cport;
      node.flags = RoleFlagsOf(message.flags);
      if ((node.flags & (kNodeMaster | kNodeSlave)) == 0) node.flags |= kNodeMaster;
      sender = view->Add(std::move(node));
    }
    result.save = true;
  }
  result.sender_id = message.sender_id;
  auto* node = &view->nodes[static_cast<size_t>(sender)];

  if (message.type == BusMessageType::kPong && !link.outbound_node_id.empty()) {
    if (node->pong_received_ms != now_ms || node->ping_sent_ms != 0 ||
        node->Has(kNodeHandshake)) {
      if (stop_here()) return result;
    }
    if constexpr (kApply) {
      node->pong_received_ms = now_ms;
      node->ping_sent_ms = 0;
      if (node->Has(kNodeHandshake)) {
        node->flags &= ~kNodeHandshake;
        result.save = true;
      }
    }
    // It answers: no longer suspected; a failure cleared as Redis clears it.
    if (node->Has(kNodePFail)) {
      if (stop_here()) return result;
      if constexpr (kApply) node->flags &= ~kNodePFail;
      result.save = true;
    } else if (FailureClears(*view, sender, now_ms, link.node_timeout_ms)) {
      if (stop_here()) return result;
      if constexpr (kApply) node->flags &= ~kNodeFail;
      result.save = true;
    }
  }

  // AUTH_REQUEST and AUTH_ACK are read for their epochs and offset only, as
  // Redis reads them: a replica's request claims its master's slots, and
  // no role, address or slot comes from either.
  const bool header_only = message.type == BusMessageType::kAuthRequest ||
                           message.type == BusMessageType::kAuthAck;

  // The sender's address: the one it announces, else the one the socket
  // shows when none is known yet (a node reached at one address keeps it:
  // a peer's source address on a multi-homed host may differ).
  std::string ip = node->ip;
  if (!message.sender_ip.empty()) ip = message.sender_ip;
  else if (ip.empty()) ip = link.peer_ip;
  if (!header_only &&
      (node->ip != ip || node->port != message.port || node->cport != message.cport)) {
    if (stop_here()) return result;
    if constexpr (kApply) {
      node->ip = ip;
      node->port = message.port;
      node->cport = message.cport;
      node->flags &= ~kNodeNoAddr;
    }
    result.save = true;
  }

  // Role: what the sender says it is.
  const uint32_t role = RoleFlagsOf(message.flags);
  if (!header_only && role != 0 && (node->flags & kRoleFlags) != role) {
    if (stop_here()) return result;
    if constexpr (kApply) node->flags = (node->flags & ~kRoleFlags) | role;
    result.save = true;
  }
  if (!header_only && node->master_id != message.master_id) {
    if (stop_here()) return result;
    if constexpr (kApply) node->master_id = message.master_id;
    result.save = true;
  }
  // Not saved: an offset is only ever the latest heard.
  if (node->repl_offset != static_cast<int64_t>(message.repl_offset)) {
    if (stop_here()) return result;
    if constexpr (kApply) node->repl_offset = static_cast<int64_t>(message.repl_offset);
  }

  const uint64_t current = NextCurrentEpoch(view->current_epoch, message.current_epoch);
  if (current != view->current_epoch) {
    if (stop_here()) return result;
    if constexpr (kApply) view->current_epoch = current;
    result.save = true;
  }
  if (message.config_epoch > node->config_epoch && IsMaster(*node)) {
    if (stop_here()) return result;
    if constexpr (kApply) node->config_epoch = message.config_epoch;
    result.save = true;
  }
  if (header_only) return result;

  if (message.type == BusMessageType::kUpdate) {
    const int32_t subject = view->Find(message.update.id);
    if (subject == kNoNode || subject == view->myself) return result;
    auto& owner = view->nodes[static_cast<size_t>(subject)];
    if (owner.config_epoch >= message.update.config_epoch) return result;
    if (stop_here()) return result;
    if constexpr (kApply) {
      // The owner of a newer claim is a master, whatever this view thought
      // (a failed-over master that comes back knows its winner as its replica).
      if (owner.Has(kNodeSlave)) {
        owner.flags = (owner.flags & ~kNodeSlave) | kNodeMaster;
        owner.master_id.clear();
      }
      owner.config_epoch = message.update.config_epoch;
      int32_t stale = kNoNode;
      bool took_mine = false;
      bool took_from_my_shard = false;
      const size_t shard_slots = SlotsOfMyShardIfNeeded(*view, link);
      ApplySlotClaim(view, subject, message.update.config_epoch, message.update.slots, &stale,
                     &took_mine, &took_from_my_shard);
      const bool follows =
          MayFollowClaimer(link, shard_slots, message.update.slots) &&
          FollowClaimerIfShardEmptied(view, subject, took_from_my_shard);
      result.my_claim_changed = took_mine || follows;
    }
    result.save = true;
    return result;
  }

  if (IsMaster(*node)) {
    int32_t stale = kNoNode;
    if (SlotClaimMoves(*view, sender, message.config_epoch, message.slots, &stale)) {
      if (stop_here()) return result;
      if constexpr (kApply) {
        bool took_mine = false;
        bool took_from_my_shard = false;
        const size_t shard_slots = SlotsOfMyShardIfNeeded(*view, link);
        ApplySlotClaim(view, sender, message.config_epoch, message.slots, &stale, &took_mine,
                       &took_from_my_shard);
        if (took_mine) result.my_claim_changed = true;
        if (MayFollowClaimer(link, shard_slots, message.slots) &&
            FollowClaimerIfShardEmptied(view, sender, took_from_my_shard)) {
          result.my_claim_changed = true;
        }
      }
      result.save = true;
    }
    if (stale != kNoNode) result.update_about = view->nodes[static_cast<size_t>(stale)].id;

    const ClusterNode& me = view->me();
    if (IsMaster(me)) {
      const EpochCollisionOutcome collision = ResolveConfigEpochCollision(
          me.id, true, me.config_epoch, view->current_epoch, node->id, true,
          message.config_epoch);
      if (collision.bumped) {
        if (stop_here()) return result;
        if constexpr (kApply) {
          view->current_epoch = collision.current_epoch;
          view->me().config_epoch = collision.config_epoch;
        }
        result.save = true;
        result.my_claim_changed = true;
      }
    }
  }

  // FAIL: a majority agreed; this node flags it too (not myself: a node
  // never takes itself for failed).
  if (!message.fail_about.empty()) {
    const int32_t failing = view->Find(message.fail_about);
    if (failing != kNoNode && failing != view->myself &&
        !view->nodes[static_cast<size_t>(failing)].Has(kNodeFail)) {
      if (stop_here()) return result;
      if constexpr (kApply) {
        ClusterNode& failed = view->nodes[static_cast<size_t>(failing)];
        failed.flags = (failed.flags & ~kNodePFail) | kNodeFail;
        failed.fail_time_ms = now_ms;
      }
      result.save = true;
    }
  }

  // Gossip from a known master: a node it flags fail? or fail is a report
  // against it (refreshed each time), one it does not flag withdraws the
  // sender's report (Redis's clusterProcessGossipSection).
  const bool sender_is_master = IsMaster(*node);
  for (const BusGossipEntry& entry : message.gossip) {
    const int32_t known = view->Find(entry.id);
    if (!sender_is_master || known == kNoNode || known == view->myself) continue;
    const auto& reports = view->nodes[static_cast<size_t>(known)].failure_reports;
    auto mine = std::find_if(reports.begin(), reports.end(), [&](const auto& report) {
      return report.first == message.sender_id;
    });
    if ((entry.flags & (kBusFlagPFail | kBusFlagFail)) == 0) {
      if (mine == reports.end()) continue;
      if (stop_here()) return result;
      if constexpr (kApply) view->nodes[static_cast<size_t>(known)].failure_reports.erase(mine);
      continue;
    }
    if (mine != reports.end() && mine->second == now_ms &&
        !ReachesFailQuorum(*view, known, now_ms, link.node_timeout_ms)) {
      continue;
    }
    if (stop_here()) return result;
    if constexpr (kApply) {
      ClusterNode& reported = view->nodes[static_cast<size_t>(known)];
      if (mine != reports.end()) {
        reported.failure_reports[static_cast<size_t>(mine - reports.begin())].second = now_ms;
      } else {
        reported.failure_reports.emplace_back(message.sender_id, now_ms);
      }
      if (ReachesFailQuorum(*view, known, now_ms, link.node_timeout_ms)) {
        reported.flags = (reported.flags & ~kNodePFail) | kNodeFail;
        reported.fail_time_ms = now_ms;
        result.fail_broadcast = reported.id;
        result.save = true;
      }
    }
  }

  // Gossip from a known sender: nodes this node has never heard of are met
  // (a handshake toward the address the sender gave), while the view has
  // room.
  for (const BusGossipEntry& entry : message.gossip) {
    if ((entry.flags & (kBusFlagNoAddr | kBusFlagHandshake)) != 0) continue;
    if (banned && banned(entry.id)) continue;
    if (!ShouldMeet(*view, entry)) continue;
    if (Full(*view)) {
      ++result.nodes_refused;
      continue;
    }
    if (stop_here()) return result;
    if constexpr (kApply) {
      ClusterNode met;
      met.id = entry.id;  // the real id: its PONG will confirm it
      met.ip = entry.ip;
      met.port = entry.port;
      met.cport = entry.cport;
      met.flags = kNodeHandshake | kNodeMaster;
      view->Add(std::move(met));
    }
    result.save = true;
  }
  return result;
}

}  // namespace

bool ApplySlotClaim(ClusterView* view, int32_t claimer, uint64_t claim_epoch,
                    const BusSlotBitmap& slots, int32_t* stale_owner, bool* took_mine,
                    bool* took_from_my_shard) {
  *stale_owner = kNoNode;
  *took_mine = false;
  if (took_from_my_shard != nullptr) *took_from_my_shard = false;
  // Myself's shard: myself, or the master myself replicates.
  const int32_t my_shard =
      view->me().Has(kNodeMaster) ? view->myself : view->MasterOf(view->myself);
  bool moved = false;
  // Only the claimed slots (libstdc++'s set-bit scan): a master of a
  // 100-node cluster claims ~164 of the 16,384.
  for (size_t slot = slots._Find_first(); slot < slots.size(); slot = slots._Find_next(slot)) {
    if (!ClaimTakes(*view, claimer, claim_epoch, slot, stale_owner)) continue;
    if (view->owner[slot] == view->myself) *took_mine = true;
    if (took_from_my_shard != nullptr && my_shard != kNoNode && view->owner[slot] == my_shard) {
      *took_from_my_shard = true;
    }
    view->owner[slot] = claimer;
    moved = true;
  }
  return moved;
}

BusReceiveResult ApplyBusMessage(ClusterView* view, const BusMessage& message,
                                 const BusLinkContext& link, int64_t now_ms,
                                 const BusBanCheck& banned) {
  return Process(view, message, link, now_ms, banned);
}

BusReceiveResult DecideBusMessage(const ClusterView& view, const BusMessage& message,
                                  const BusLinkContext& link, int64_t now_ms,
                                  const BusBanCheck& banned) {
  return Process(&view, message, link, now_ms, banned);
}

BusReceiveResult ReceiveBusMessage(ClusterState* state, const BusMessage& message,
                                   const BusLinkContext& link, int64_t now_ms,
                                   const BusBanCheck& banned, std::string* save_error) {
  BusReceiveResult result = state->Read([&](const ClusterView& view) {
    return DecideBusMessage(view, message, link, now_ms, banned);
  });
  if (!result.changed) return result;
  // The view may have moved between the two holds: decide again on it.
  *save_error = state->Update([&](ClusterView& view) {
    result = ApplyBusMessage(&view, message, link, now_ms, banned);
    return result.save;
  });
  return result;
}

}  // namespace bloomgate
