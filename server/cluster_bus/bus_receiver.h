// What a received bus message does to this node's view of the cluster:
// Redis's clusterProcessPacket for PING, PONG, MEET, UPDATE and FAIL (and
// the epochs of AUTH_REQUEST and AUTH_ACK; their votes are
// replica_election's), with
// its failure detection: failure reports read from the gossip of masters,
// a node flagged fail once a majority of masters report it within twice
// the node timeout, fail? and fail cleared on a PONG as Redis clears them. Pure over a ClusterView (no sockets, no clock reads),
// so the tests drive it message by message. ReceiveBusMessage decides under
// the view's shared lock and takes the exclusive one only for a message
// that changes the view (most PINGs of a settled cluster change nothing).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "server/cluster/cluster_state.h"
#include "server/cluster_bus/bus_message.h"

namespace bloomgate {

// Where the message came from.
struct BusLinkContext {
  std::string peer_ip;   // the address the socket sees the sender at
  std::string local_ip;  // this end's address on that socket
  // An outbound link was opened toward a node of the view: the id it had
  // then (a handshake node's provisional id until its PONG names it).
  std::string outbound_node_id;
  bool announce_ip_set = false;  // cluster-announce-ip fixes myself's address
  // cluster-node-timeout: failure reports are valid for twice it, and a
  // failed master serving slots is cleared no sooner than twice it.
  int64_t node_timeout_ms = 15'000;
  // cluster-allow-replica-migration: a master whose last slot moved to a
  // node holding other slots too becomes its replica only when set.
  bool allow_replica_migration = true;
};

struct BusReceiveResult {
  // The view changed (or, from DecideBusMessage, would change).
  bool changed = false;
  // The sender is unknown and the message is not a MEET (or a PONG on our
  // own link to a node in handshake): dropped, nothing applied.
  bool dropped = false;
  // The view changed in what cluster-config-file keeps: save it.
  bool save = false;
  // Myself's own claim (slots or config epoch) changed: tell every peer.
  bool my_claim_changed = false;
  // The sender's id once known (so an inbound link can name its node).
  std::string sender_id;
  // A node whose claim beats the sender's on some slot the sender claims:
  // send the sender an UPDATE about it.
  std::optional<std::string> update_about;
  // Nodes a MEET or gossip would have added past kMaxClusterNodes.
  uint32_t nodes_refused = 0;
  // A node this message made fail (a majority of masters reported it):
  // tell every peer (Redis's clusterSendFail). Empty: none.
  std::string fail_broadcast;
};

// Whether a node id was forgotten lately (CLUSTER FORGET's ban list):
// gossip about it is ignored.
using BusBanCheck = std::function<bool(std::string_view id)>;

BusReceiveResult ApplyBusMessage(ClusterView* view, const BusMessage& message,
                                 const BusLinkContext& link, int64_t now_ms,
                                 const BusBanCheck& banned);

// The same decisions without changing the view: `changed` says whether
// ApplyBusMessage would change it; when it would not, the rest of the
// result is ApplyBusMessage's.
BusReceiveResult DecideBusMessage(const ClusterView& view, const BusMessage& message,
                                  const BusLinkContext& link, int64_t now_ms,
                                  const BusBanCheck& banned);

// A received message against the shared view: decided under the shared
// lock, applied under the exclusive one only when it changes the view
// (decided again there: the view may have moved between the two), and
// nodes.conf saved after both (ClusterState::Update). *save_error gets the
// save's failure text, if any.
BusReceiveResult ReceiveBusMessage(ClusterState* state, const BusMessage& message,
                                   const BusLinkContext& link, int64_t now_ms,
                                   const BusBanCheck& banned, std::string* save_error);

// Gives the slots in `slots` to `claimer` at `claim_epoch` where the epoch
// rule lets it (unowned, or owned at a lower config epoch; never a slot this
// node is importing). Returns whether anything moved; *stale_owner is set to
// an owner whose higher epoch kept a slot the claimer claims (kNoNode: none),
// *took_mine to whether a slot of myself's moved, *took_from_my_shard (if
// given) to whether a slot of myself's shard (myself, or myself's master)
// moved: replica_election's FollowClaimerIfShardEmptied then decides
// whether myself follows the claimer.
bool ApplySlotClaim(ClusterView* view, int32_t claimer, uint64_t claim_epoch,
                    const BusSlotBitmap& slots, int32_t* stale_owner, bool* took_mine,
                    bool* took_from_my_shard = nullptr);

}  // namespace bloomgate
