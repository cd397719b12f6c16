// What a received bus message does to this node's view of the cluster:
// Redis's clusterProcessPacket for PING, PONG, MEET and UPDATE, minus
// failure detection. Pure over a ClusterView (no sockets, no clock reads),
// so the tests drive it message by message.
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
};

struct BusReceiveResult {
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
};

// Whether a node id was forgotten lately (CLUSTER FORGET's ban list):
// gossip about it is ignored.
using BusBanCheck = std::function<bool(std::string_view id)>;

BusReceiveResult ApplyBusMessage(ClusterView* view, const BusMessage& message,
                                 const BusLinkContext& link, int64_t now_ms,
                                 const BusBanCheck& banned);

// Gives the slots in `slots` to `claimer` at `claim_epoch` where the epoch
// rule lets it (unowned, or owned at a lower config epoch; never a slot this
// node is importing). Returns whether anything moved; *stale_owner is set to
// an owner whose higher epoch kept a slot the claimer claims (kNoNode: none),
// *took_mine to whether a slot of myself's moved.
bool ApplySlotClaim(ClusterView* view, int32_t claimer, uint64_t claim_epoch,
                    const BusSlotBitmap& slots, int32_t* stale_owner, bool* took_mine);

}  // namespace bloomgate
