// Three ClusterBus instances in one process, on loopback: a MEET joins two
// nodes, gossip brings in a third that only one of them met, a slot claim
// spreads, and a PING from a node nobody met changes nothing.
#include "server/cluster_bus/cluster_bus.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace bloomgate {
namespace {

constexpr auto kDeadline = std::chrono::seconds(20);

bool WaitFor(const std::function<bool()>& condition) {
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

struct Node {
  ClusterState state;
  std::unique_ptr<ClusterBus> bus;

  explicit Node(uint16_t port) {
    state.Enable(FreshView(port, 0, ""), nullptr);
    bus = std::make_unique<ClusterBus>(
        &state, ClusterBusOptions{{"127.0.0.1"}, /*cport=*/0, /*node_timeout_ms=*/2000, ""});
    std::string error;
    EXPECT_TRUE(bus->Start(&error)) << error;
  }
  ~Node() { bus->Stop(); }

  std::string id() { return state.my_id(); }
  // Knows `id` as a node past its handshake, with its link up.
  bool KnowsConnected(const std::string& id) {
    return state.Read([&](const ClusterView& v) {
      const int32_t i = v.Find(id);
      return i != kNoNode && !v.nodes[i].Has(kNodeHandshake) && v.nodes[i].link_connected;
    });
  }
  size_t NodeCount() {
    return state.Read([](const ClusterView& v) { return v.nodes.size(); });
  }
  std::string OwnerOf(int slot) {
    return state.Read([&](const ClusterView& v) {
      const int32_t owner = v.owner[slot];
      return owner == kNoNode ? std::string() : v.nodes[owner].id;
    });
  }
  void Claim(int first, int last, uint64_t epoch) {
    state.Update([&](ClusterView& v) {
      for (int slot = first; slot <= last; ++slot) v.owner[slot] = v.myself;
      v.me().config_epoch = epoch;
      v.current_epoch = std::max(v.current_epoch, epoch);
      return true;
    });
  }
};

TEST(ClusterBus, MeetGossipAndSlotClaimsConverge) {
  Node a(7001), b(7002), c(7003);
  a.Claim(0, 99, 1);
  b.Claim(100, 199, 2);
  // b meets a, c meets b: a learns c only through gossip.
  ASSERT_EQ(b.bus->Meet("127.0.0.1", 7001, a.bus->bound_port()), MeetOutcome::kOk);
  ASSERT_EQ(c.bus->Meet("127.0.0.1", 7002, b.bus->bound_port()), MeetOutcome::kOk);
  for (Node* x : {&a, &b, &c}) {
    for (Node* y : {&a, &b, &c}) {
      if (x == y) continue;
      EXPECT_TRUE(WaitFor([&] { return x->KnowsConnected(y->id()); }))
          << x->id() << " does not know " << y->id();
    }
    EXPECT_EQ(x->NodeCount(), 3u);  // the handshake nodes were named, not kept
    EXPECT_EQ(x->OwnerOf(5), a.id());
    EXPECT_EQ(x->OwnerOf(150), b.id());
  }
  // c takes slot 5 at a higher epoch: everyone follows, a included.
  c.Claim(5, 5, 10);
  for (Node* x : {&a, &b, &c}) {
    EXPECT_TRUE(WaitFor([&] { return x->OwnerOf(5) == c.id(); }));
  }
  EXPECT_GT(a.state.counters().sent[static_cast<size_t>(ClusterMessageType::kPing)].load() +
                a.state.counters().sent[static_cast<size_t>(ClusterMessageType::kPong)].load(),
            0u);
  const std::vector<BusLinkInfo> links = a.bus->Links();
  EXPECT_EQ(links.size(), 4u);  // to and from b and c
}

TEST(ClusterBus, ForgetRemovesAndBansTheNode) {
  Node a(7011), b(7012);
  ASSERT_EQ(a.bus->Meet("127.0.0.1", 7012, b.bus->bound_port()), MeetOutcome::kOk);
  ASSERT_TRUE(WaitFor([&] { return a.KnowsConnected(b.id()) && b.KnowsConnected(a.id()); }));
  EXPECT_EQ(a.bus->Forget(a.id()), ForgetOutcome::kMyself);
  EXPECT_EQ(a.bus->Forget(std::string(40, 'f')), ForgetOutcome::kUnknownNode);
  EXPECT_EQ(a.bus->Forget(b.id()), ForgetOutcome::kOk);
  EXPECT_TRUE(a.bus->Banned(b.id()));
  EXPECT_EQ(a.NodeCount(), 1u);
  // b keeps pinging a, which no longer knows it: refused, never re-added.
  const uint64_t before =
      b.state.counters().sent[static_cast<size_t>(ClusterMessageType::kPing)].load();
  EXPECT_TRUE(WaitFor([&] {
    return b.state.counters().sent[static_cast<size_t>(ClusterMessageType::kPing)].load() >
           before + 2;
  }));
  EXPECT_EQ(a.NodeCount(), 1u);
}

TEST(ClusterBus, MeetRefusesWhatIsNotAnAddress) {
  Node a(7021);
  EXPECT_EQ(a.bus->Meet("localhost", 7000, 17000), MeetOutcome::kBadAddress);
  EXPECT_EQ(a.bus->Meet("127.0.0.1", 0, 17000), MeetOutcome::kBadAddress);
  EXPECT_EQ(a.bus->Meet("::1", 7000, 17000), MeetOutcome::kOk);
}

}  // namespace
}  // namespace bloomgate
