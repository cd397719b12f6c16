#include "server/cluster_bus/bus_receiver.h"

#include "server/cluster_bus/bus_node_flags.h"
#include "server/cluster_bus/epoch_rules.h"

namespace bloomgate {
namespace {

bool IsMaster(const ClusterNode& node) { return node.Has(kNodeMaster); }

// A node with no handshake under way toward ip:port (Redis's
// clusterHandshakeInProgress) and not known by id.
bool ShouldMeet(const ClusterView& view, const BusGossipEntry& entry) {
  if (view.Find(entry.id) != kNoNode) return false;
  for (const ClusterNode& node : view.nodes) {
    if (node.Has(kNodeHandshake) && node.ip == entry.ip && node.port == entry.port) return false;
  }
  return true;
}

// Gossip from a known sender: nodes this node has never heard of are met
// (a handshake toward the address the sender gave). Failure reports are
// the failure detector's, not read here.
bool ApplyGossip(ClusterView* view, const BusMessage& message, const BusBanCheck& banned) {
  bool added = false;
  for (const BusGossipEntry& entry : message.gossip) {
    if ((entry.flags & (kBusFlagNoAddr | kBusFlagHandshake)) != 0) continue;
    if (banned && banned(entry.id)) continue;
    if (!ShouldMeet(*view, entry)) continue;
    ClusterNode node;
    node.id = entry.id;  // the real id: its PONG will confirm it
    node.ip = entry.ip;
    node.port = entry.port;
    node.cport = entry.cport;
    node.flags = kNodeHandshake | kNodeMaster;
    view->Add(std::move(node));
    added = true;
  }
  return added;
}

// Myself's address as a peer sees it, learnt from a MEET (or any message
// while myself has none), unless cluster-announce-ip fixes it.
bool LearnMyIp(ClusterView* view, const BusMessage& message, const BusLinkContext& link) {
  if (link.announce_ip_set || link.local_ip.empty()) return false;
  ClusterNode& me = view->me();
  if (message.type != BusMessageType::kMeet && !me.ip.empty()) return false;
  if (me.ip == link.local_ip) return false;
  me.ip = link.local_ip;
  return true;
}

// The node a PONG on our own link answers for, when the sender's id is not
// in the view: the handshake node the link was opened toward takes the
// sender's id (Redis's clusterRenameNode).
int32_t NameHandshakeNode(ClusterView* view, const BusMessage& message,
                          const BusLinkContext& link) {
  if (message.type != BusMessageType::kPong || link.outbound_node_id.empty()) return kNoNode;
  const int32_t index = view->Find(link.outbound_node_id);
  if (index == kNoNode || !view->nodes[static_cast<size_t>(index)].Has(kNodeHandshake)) {
    return kNoNode;
  }
  view->nodes[static_cast<size_t>(index)].id = message.sender_id;
  return index;
}

// A PONG on our link toward a handshake node from a node known already
// (CLUSTER MEET of a member): the provisional node goes (Redis deletes it
// the same way). True when it was removed.
bool ForgetHandshakeOfKnownNode(ClusterView* view, const BusMessage& message,
                                const BusLinkContext& link) {
  if (message.type != BusMessageType::kPong || link.outbound_node_id.empty() ||
      link.outbound_node_id == message.sender_id) {
    return false;
  }
  const int32_t index = view->Find(link.outbound_node_id);
  if (index == kNoNode || index == view->myself ||
      !view->nodes[static_cast<size_t>(index)].Has(kNodeHandshake)) {
    return false;
  }
  view->Remove(index);
  return true;
}

}  // namespace

bool ApplySlotClaim(ClusterView* view, int32_t claimer, uint64_t claim_epoch,
                    const BusSlotBitmap& slots, int32_t* stale_owner, bool* took_mine) {
  *stale_owner = kNoNode;
  *took_mine = false;
  bool moved = false;
  // Only the claimed slots (libstdc++'s set-bit scan): a master of a
  // 100-node cluster claims ~164 of the 16,384.
  for (size_t slot = slots._Find_first(); slot < slots.size(); slot = slots._Find_next(slot)) {
    const int32_t owner = view->owner[slot];
    if (owner == claimer) continue;
    // A slot being imported is this node's to settle (SETSLOT NODE).
    if (view->importing_from[slot] != kNoNode) continue;
    const uint64_t owner_epoch =
        owner == kNoNode ? 0 : view->nodes[static_cast<size_t>(owner)].config_epoch;
    if (SlotClaimWins(owner != kNoNode, owner_epoch, claim_epoch)) {
      if (owner == view->myself) *took_mine = true;
      view->owner[slot] = claimer;
      moved = true;
    } else if (owner_epoch > claim_epoch) {
      *stale_owner = owner;
    }
  }
  return moved;
}

BusReceiveResult ApplyBusMessage(ClusterView* view, const BusMessage& message,
                                 const BusLinkContext& link, int64_t now_ms,
                                 const BusBanCheck& banned) {
  BusReceiveResult result;
  int32_t sender = view->Find(message.sender_id);
  if (sender == view->myself) {
    result.dropped = true;  // our own message looped back (a MEET toward ourselves)
    return result;
  }
  if (sender == kNoNode) {
    sender = NameHandshakeNode(view, message, link);
    result.save = sender != kNoNode;
  } else if (ForgetHandshakeOfKnownNode(view, message, link)) {
    sender = view->Find(message.sender_id);  // indices above the removed node moved
  }

  if (LearnMyIp(view, message, link)) result.save = true;

  if (sender == kNoNode) {
    if (message.type != BusMessageType::kMeet) {
      result.dropped = true;  // a node that was not met
      return result;
    }
    ClusterNode node;
    node.id = message.sender_id;
    node.ip = message.sender_ip.empty() ? link.peer_ip : message.sender_ip;
    node.port = message.port;
    node.cport = message.cport;
    node.flags = RoleFlagsOf(message.flags);
    if ((node.flags & (kNodeMaster | kNodeSlave)) == 0) node.flags |= kNodeMaster;
    sender = view->Add(std::move(node));
    result.save = true;
  }
  result.sender_id = message.sender_id;
  ClusterNode* node = &view->nodes[static_cast<size_t>(sender)];

  if (message.type == BusMessageType::kPong && !link.outbound_node_id.empty()) {
    node->pong_received_ms = now_ms;
    node->ping_sent_ms = 0;
    if (node->Has(kNodeHandshake)) {
      node->flags &= ~kNodeHandshake;
      result.save = true;
    }
  }

  // The sender's address: the one it announces, else the one the socket
  // shows when none is known yet (a node reached at one address keeps it:
  // a peer's source address on a multi-homed host may differ).
  std::string ip = node->ip;
  if (!message.sender_ip.empty()) ip = message.sender_ip;
  else if (ip.empty()) ip = link.peer_ip;
  if (node->ip != ip || node->port != message.port || node->cport != message.cport) {
    node->ip = ip;
    node->port = message.port;
    node->cport = message.cport;
    node->flags &= ~kNodeNoAddr;
    result.save = true;
  }

  // Role: what the sender says it is.
  const uint32_t role = RoleFlagsOf(message.flags);
  if (role != 0 && (node->flags & kRoleFlags) != role) {
    node->flags = (node->flags & ~kRoleFlags) | role;
    result.save = true;
  }
  if (node->master_id != message.master_id) {
    node->master_id = message.master_id;
    result.save = true;
  }

  const uint64_t current = NextCurrentEpoch(view->current_epoch, message.current_epoch);
  if (current != view->current_epoch) {
    view->current_epoch = current;
    result.save = true;
  }
  if (message.config_epoch > node->config_epoch && IsMaster(*node)) {
    node->config_epoch = message.config_epoch;
    result.save = true;
  }

  if (message.type == BusMessageType::kUpdate) {
    const int32_t subject = view->Find(message.update.id);
    if (subject == kNoNode || subject == view->myself) return result;
    ClusterNode& owner = view->nodes[static_cast<size_t>(subject)];
    if (owner.config_epoch >= message.update.config_epoch) return result;
    owner.config_epoch = message.update.config_epoch;
    int32_t stale = kNoNode;
    bool took_mine = false;
    ApplySlotClaim(view, subject, message.update.config_epoch, message.update.slots, &stale,
                   &took_mine);
    result.my_claim_changed = took_mine;
    result.save = true;
    return result;
  }

  if (IsMaster(*node)) {
    int32_t stale = kNoNode;
    bool took_mine = false;
    if (ApplySlotClaim(view, sender, message.config_epoch, message.slots, &stale, &took_mine)) {
      result.save = true;
      if (took_mine) result.my_claim_changed = true;
    }
    if (stale != kNoNode) result.update_about = view->nodes[static_cast<size_t>(stale)].id;

    ClusterNode& me = view->me();
    if (IsMaster(me)) {
      const EpochCollisionOutcome collision = ResolveConfigEpochCollision(
          me.id, true, me.config_epoch, view->current_epoch, node->id, true,
          message.config_epoch);
      if (collision.bumped) {
        view->current_epoch = collision.current_epoch;
        me.config_epoch = collision.config_epoch;
        result.save = true;
        result.my_claim_changed = true;
      }
    }
  }

  if (ApplyGossip(view, message, banned)) result.save = true;
  return result;
}

}  // namespace bloomgate
