// What one cluster-bus message says, decoded: the sender's view of itself
// (id, address, flags, master, epochs, the slots it claims) and, by type,
// gossip about a few other nodes or one node's slot claim (UPDATE).
// bus_codec turns these into bytes and back; nothing here knows sockets.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <vector>

namespace bloomgate {

inline constexpr int kBusSlotCount = 16384;
using BusSlotBitmap = std::bitset<kBusSlotCount>;

enum class BusMessageType : uint16_t {
  kPing = 0,
  kPong = 1,
  kMeet = 2,    // a PING that asks the receiver to add the sender
  kUpdate = 3,  // "this node owns these slots at this config epoch"
  // A replica asks every master for its vote in an election (Redis's
  // FAILOVER_AUTH_REQUEST): its header claims its master's slots at its
  // master's config epoch, with the election's epoch as currentEpoch.
  kAuthRequest = 4,
  kAuthAck = 5,  // a master's vote for the sender of an AUTH_REQUEST
  // A replica asks its master to pause writes for CLUSTER FAILOVER
  // (Redis's MFSTART): a header only.
  kMfStart = 6,
};
inline constexpr uint16_t kBusMessageTypeCount = 7;
// Whether a message of this type carries a gossip section (PING, PONG,
// MEET); UPDATE carries an update instead, the others neither.
inline constexpr bool BusTypeHasGossip(BusMessageType type) {
  return type == BusMessageType::kPing || type == BusMessageType::kPong ||
         type == BusMessageType::kMeet;
}
const char* ToString(BusMessageType type);

// The node flags a message carries (the bus's own bits, not Redis's).
enum BusNodeFlag : uint16_t {
  kBusFlagMaster = 1 << 0,
  kBusFlagReplica = 1 << 1,
  kBusFlagPFail = 1 << 2,
  kBusFlagFail = 1 << 3,
  kBusFlagHandshake = 1 << 4,
  kBusFlagNoAddr = 1 << 5,
  kBusFlagNoFailover = 1 << 6,
};
inline constexpr uint16_t kBusKnownFlags = (1 << 7) - 1;

// Message flags (Redis's mflags), any message type: bits of this one
// message rather than of the sender's node.
enum BusMessageFlag : uint16_t {
  // An AUTH_REQUEST of a manual failover: vote even though the master is
  // not failing (Redis's CLUSTERMSG_FLAG0_FORCEACK).
  kBusMessageForceAck = 1 << 0,
  // The sender is a master whose clients are paused for a manual failover:
  // the offset it sends is final (Redis's CLUSTERMSG_FLAG0_PAUSED).
  kBusMessagePaused = 1 << 1,
};

// A node id: 40 lowercase hex characters, as Redis's.
inline constexpr size_t kBusNodeIdLength = 40;
// The longest textual IPv6 address (INET6_ADDRSTRLEN - 1).
inline constexpr size_t kBusMaxIpLength = 45;

struct BusGossipEntry {
  std::string id;
  std::string ip;
  uint16_t port = 0;
  uint16_t cport = 0;
  uint16_t flags = 0;
  uint32_t ping_sent_s = 0;      // unix seconds, 0 = none pending
  uint32_t pong_received_s = 0;  // unix seconds of the last PONG seen
  bool operator==(const BusGossipEntry&) const = default;
};

struct BusUpdate {
  std::string id;  // the node that owns `slots`
  uint64_t config_epoch = 0;
  BusSlotBitmap slots;
  bool operator==(const BusUpdate&) const = default;
};

struct BusMessage {
  BusMessageType type = BusMessageType::kPing;
  // The sender. An empty ip means "use the address you see me at".
  std::string sender_id;
  std::string sender_ip;
  uint16_t port = 0;
  uint16_t cport = 0;
  uint16_t flags = 0;
  std::string master_id;  // empty for a master
  uint64_t current_epoch = 0;
  uint64_t config_epoch = 0;
  BusSlotBitmap slots;
  // The sender's replication offset (a replica's is what it applied of its
  // master's stream; the rank of a replica in a failover is read from it).
  // 0 from a peer that does not send it.
  uint64_t repl_offset = 0;
  // Redis's FAIL message, as a field of a PONG: the id of a node a majority
  // of masters reported failing; every receiver flags it fail. Empty: none.
  std::string fail_about;
  // BusMessageFlag bits; bits this version does not define are kept as
  // they came (a later version's) and mean nothing here. 0: none.
  uint16_t message_flags = 0;
  std::vector<BusGossipEntry> gossip;  // PING, PONG, MEET
  BusUpdate update;                    // UPDATE only
  bool operator==(const BusMessage&) const = default;
};

}  // namespace bloomgate
