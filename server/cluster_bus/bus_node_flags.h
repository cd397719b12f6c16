// The bus's node flags (bus_message.h) from and to the cluster room's
// (cluster_state.h): the two sets are kept apart so the wire format does not
// move when the room's bits do.
#pragma once

#include <cstdint>

#include "server/cluster/cluster_state.h"
#include "server/cluster_bus/bus_message.h"

namespace bloomgate {

inline uint16_t BusFlagsOf(uint32_t node_flags) {
  uint16_t out = 0;
  if (node_flags & kNodeMaster) out |= kBusFlagMaster;
  if (node_flags & kNodeSlave) out |= kBusFlagReplica;
  if (node_flags & kNodePFail) out |= kBusFlagPFail;
  if (node_flags & kNodeFail) out |= kBusFlagFail;
  if (node_flags & kNodeHandshake) out |= kBusFlagHandshake;
  if (node_flags & kNodeNoAddr) out |= kBusFlagNoAddr;
  if (node_flags & kNodeNoFailover) out |= kBusFlagNoFailover;
  return out;
}

// The role bits a sender states about itself (master or replica, and
// nofailover); the rest are the receiver's own judgement.
inline uint32_t RoleFlagsOf(uint16_t bus_flags) {
  uint32_t out = 0;
  if (bus_flags & kBusFlagMaster) out |= kNodeMaster;
  if (bus_flags & kBusFlagReplica) out |= kNodeSlave;
  if (bus_flags & kBusFlagNoFailover) out |= kNodeNoFailover;
  return out;
}

inline constexpr uint32_t kRoleFlags = kNodeMaster | kNodeSlave | kNodeNoFailover;

}  // namespace bloomgate
