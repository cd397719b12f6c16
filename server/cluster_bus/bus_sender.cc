#include "server/cluster_bus/bus_sender.h"

#include <algorithm>
#include <vector>

#include "server/cluster_bus/bus_node_flags.h"

namespace bloomgate {
namespace {

BusSlotBitmap SlotsOf(const ClusterView& view, int32_t index) {
  BusSlotBitmap slots;
  for (int slot = 0; slot < kBusSlotCount; ++slot) {
    if (view.owner[static_cast<size_t>(slot)] == index) slots.set(static_cast<size_t>(slot));
  }
  return slots;
}

uint32_t UnixSeconds(int64_t ms) { return ms <= 0 ? 0 : static_cast<uint32_t>(ms / 1000); }

}  // namespace

BusMessage DescribeMyself(const ClusterView& view, BusMessageType type,
                          std::string_view announce_ip) {
  const ClusterNode& me = view.me();
  BusMessage m;
  m.type = type;
  m.sender_id = me.id;
  m.sender_ip = std::string(announce_ip);
  m.port = me.port;
  m.cport = me.cport;
  m.flags = BusFlagsOf(me.flags);
  m.master_id = me.Has(kNodeSlave) ? me.master_id : std::string();
  m.current_epoch = view.current_epoch;
  // A replica speaks with its master's epoch and slots (Redis's clusterBuildMessageHdr).
  const int32_t master = view.MasterOf(view.myself);
  m.config_epoch = view.EpochOf(view.myself);
  m.slots = SlotsOf(view, master != kNoNode ? master : view.myself);
  return m;
}

size_t GossipCount(size_t known_nodes) {
  const size_t fresh = known_nodes >= 2 ? known_nodes - 2 : 0;
  return std::min(std::max<size_t>(3, known_nodes / 10), fresh);
}

void AddGossip(const ClusterView& view, int32_t receiver, std::mt19937_64* random,
               BusMessage* message) {
  std::vector<int32_t> candidates;
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    const auto index = static_cast<int32_t>(i);
    const ClusterNode& node = view.nodes[i];
    if (index == view.myself || index == receiver || node.ip.empty() ||
        node.Has(kNodeHandshake | kNodeNoAddr)) {
      continue;
    }
    candidates.push_back(index);
  }
  const size_t wanted = std::min(GossipCount(view.nodes.size()), candidates.size());
  auto add = [message](const ClusterNode& node) {
    message->gossip.push_back({node.id, node.ip, node.port, node.cport, BusFlagsOf(node.flags),
                               UnixSeconds(node.ping_sent_ms),
                               UnixSeconds(node.pong_received_ms)});
  };
  // A partial Fisher-Yates shuffle: the first `wanted` are a uniform sample.
  for (size_t i = 0; i < wanted; ++i) {
    std::uniform_int_distribution<size_t> pick(i, candidates.size() - 1);
    std::swap(candidates[i], candidates[pick(*random)]);
    add(view.nodes[static_cast<size_t>(candidates[i])]);
  }
  // Every node suspected here rides along too (Redis 7.0's pfail_wanted),
  // so failure reports reach the other masters within a round.
  for (size_t i = wanted; i < candidates.size(); ++i) {
    const ClusterNode& node = view.nodes[static_cast<size_t>(candidates[i])];
    if (node.Has(kNodePFail)) add(node);
  }
}

BusMessage DescribeUpdate(const ClusterView& view, int32_t owner, std::string_view announce_ip) {
  BusMessage m = DescribeMyself(view, BusMessageType::kUpdate, announce_ip);
  const ClusterNode& node = view.nodes[static_cast<size_t>(owner)];
  m.update.id = node.id;
  m.update.config_epoch = node.config_epoch;
  m.update.slots = SlotsOf(view, owner);
  return m;
}

}  // namespace bloomgate
