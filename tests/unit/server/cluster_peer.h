// A master peer of this node's cluster, as the bus would have met it, for
// tests that build a cluster view by hand.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "server/cluster/cluster_state.h"

namespace bloomgate::testing {

// At 127.0.0.1:`port`, its bus at port + 10000, its link up.
inline ClusterNode MasterPeer(std::string_view id, uint16_t port) {
  ClusterNode peer;
  peer.id = std::string(id);
  peer.ip = "127.0.0.1";
  peer.port = port;
  peer.cport = static_cast<uint16_t>(port + 10000);
  peer.flags = kNodeMaster;
  peer.link_connected = true;
  return peer;
}

}  // namespace bloomgate::testing
