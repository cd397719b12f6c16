// What this node says on the bus: its own header (id, address, flags,
// master, epochs, the slots it owns) and a gossip section about a few other
// nodes, read from the cluster room's view.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>

#include "server/cluster/cluster_state.h"
#include "server/cluster_bus/bus_message.h"

namespace bloomgate {

// Myself as the sender of a `type` message. `announce_ip` empty: no address,
// the receiver uses the one it sees (as Redis without cluster-announce-ip).
BusMessage DescribeMyself(const ClusterView& view, BusMessageType type,
                          std::string_view announce_ip);

// How many nodes a PING/PONG/MEET gossips about: Redis's
// max(3, known nodes / 10), at most the known nodes other than myself and
// the receiver. With 100 nodes that is 10 entries (64 bytes each on
// loopback IPv4), so every node's state reaches every other node within a
// few rounds (cluster.c's clusterSendPing: "wanted").
size_t GossipCount(size_t known_nodes);

// Adds that many gossip entries about distinct nodes picked at random,
// leaving out myself, `receiver` (kNoNode: none) and nodes without an
// address or in handshake, then one about every other node flagged fail?.
void AddGossip(const ClusterView& view, int32_t receiver, std::mt19937_64* random,
               BusMessage* message);

// An UPDATE telling its receiver that `owner` holds these slots at its
// config epoch (sent to a node whose claim is stale).
BusMessage DescribeUpdate(const ClusterView& view, int32_t owner, std::string_view announce_ip);

}  // namespace bloomgate
