#include "server/cluster_bus/bus_receiver.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <random>
#include <string>
#include <thread>

#include "server/cluster_bus/bus_codec.h"
#include "server/cluster_bus/bus_sender.h"

namespace bloomgate {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;

// A node's own view: myself plus `peers`, all masters with addresses.
ClusterView ViewOf(const std::string& my_id, uint16_t my_port) {
  ClusterView view = FreshView(my_port, my_port + 10000, "127.0.0.1");
  view.me().id = my_id;
  return view;
}

int32_t AddPeer(ClusterView* view, const std::string& id, uint16_t port, uint64_t epoch) {
  ClusterNode node;
  node.id = id;
  node.ip = "127.0.0.1";
  node.port = port;
  node.cport = port + 10000;
  node.flags = kNodeMaster;
  node.config_epoch = epoch;
  return view->Add(std::move(node));
}

const std::string kA = std::string(40, 'a');
const std::string kB = std::string(40, 'b');
const std::string kC = std::string(40, 'c');
const std::string kD = std::string(40, 'd');

BusLinkContext Inbound() { return {"127.0.0.1", "127.0.0.1", "", false}; }
BusLinkContext Outbound(const std::string& id) { return {"127.0.0.1", "127.0.0.1", id, false}; }

BusReceiveResult Receive(ClusterView* view, const BusMessage& m, const BusLinkContext& link,
                         const BusBanCheck& banned = nullptr) {
  // Through the codec, as on the wire.
  std::string bytes;
  EncodeBusMessage(m, &bytes);
  BusMessage decoded;
  size_t consumed = 0;
  EXPECT_EQ(DecodeBusMessage(bytes, &decoded, &consumed), BusDecodeStatus::kOk);
  return ApplyBusMessage(view, decoded, link, kNow, banned);
}

TEST(BusReceiver, APingFromANodeThatWasNotMetIsDropped) {
  ClusterView me = ViewOf(kA, 7000);
  ClusterView stranger = ViewOf(kB, 7001);
  const BusReceiveResult r =
      Receive(&me, DescribeMyself(stranger, BusMessageType::kPing, ""), Inbound());
  EXPECT_TRUE(r.dropped);
  EXPECT_EQ(me.nodes.size(), 1u);
}

TEST(BusReceiver, AMeetAddsTheSenderAtTheAddressTheSocketSees) {
  ClusterView me = ViewOf(kA, 7000);
  me.me().ip.clear();
  ClusterView other = ViewOf(kB, 7001);
  const BusReceiveResult r =
      Receive(&me, DescribeMyself(other, BusMessageType::kMeet, ""), {"10.0.0.2", "10.0.0.1", "", false});
  EXPECT_FALSE(r.dropped);
  EXPECT_TRUE(r.save);
  const int32_t b = me.Find(kB);
  ASSERT_NE(b, kNoNode);
  EXPECT_EQ(me.nodes[b].ip, "10.0.0.2");
  EXPECT_EQ(me.nodes[b].port, 7001);
  EXPECT_EQ(me.nodes[b].cport, 17001);
  EXPECT_EQ(me.me().ip, "10.0.0.1");  // learnt from the MEET
}

TEST(BusReceiver, APongNamesTheHandshakeNodeOfOurLink) {
  ClusterView me = ViewOf(kA, 7000);
  ClusterNode handshake;
  handshake.id = kD;  // provisional
  handshake.ip = "127.0.0.1";
  handshake.port = 7001;
  handshake.cport = 17001;
  handshake.flags = kNodeHandshake | kNodeMaster;
  me.Add(handshake);
  ClusterView other = ViewOf(kB, 7001);
  const BusReceiveResult r =
      Receive(&me, DescribeMyself(other, BusMessageType::kPong, ""), Outbound(kD));
  EXPECT_FALSE(r.dropped);
  EXPECT_EQ(me.Find(kD), kNoNode);
  const int32_t b = me.Find(kB);
  ASSERT_NE(b, kNoNode);
  EXPECT_FALSE(me.nodes[b].Has(kNodeHandshake));
  EXPECT_EQ(me.nodes[b].pong_received_ms, kNow);
}

TEST(BusReceiver, AHandshakeTowardAKnownNodeIsDropped) {
  ClusterView me = ViewOf(kA, 7000);
  AddPeer(&me, kB, 7001, 0);
  ClusterNode handshake;
  handshake.id = kD;
  handshake.ip = "127.0.0.1";
  handshake.port = 7001;
  handshake.cport = 17001;
  handshake.flags = kNodeHandshake | kNodeMaster;
  me.Add(handshake);
  Receive(&me, DescribeMyself(ViewOf(kB, 7001), BusMessageType::kPong, ""), Outbound(kD));
  EXPECT_EQ(me.Find(kD), kNoNode);
  EXPECT_NE(me.Find(kB), kNoNode);
  EXPECT_EQ(me.nodes.size(), 2u);
}

TEST(BusReceiver, AHigherConfigEpochTakesTheSlot) {
  ClusterView me = ViewOf(kA, 7000);
  const int32_t b = AddPeer(&me, kB, 7001, 3);
  const int32_t c = AddPeer(&me, kC, 7002, 5);
  me.owner[100] = b;
  ClusterView sender = ViewOf(kC, 7002);
  sender.me().config_epoch = 5;
  sender.owner[100] = sender.myself;
  const BusReceiveResult r = Receive(&me, DescribeMyself(sender, BusMessageType::kPing, ""), Inbound());
  EXPECT_TRUE(r.save);
  EXPECT_EQ(me.owner[100], c);
}

TEST(BusReceiver, AStaleClaimKeepsTheOwnerAndAsksForAnUpdate) {
  ClusterView me = ViewOf(kA, 7000);
  const int32_t b = AddPeer(&me, kB, 7001, 7);
  AddPeer(&me, kC, 7002, 2);
  me.owner[100] = b;
  ClusterView sender = ViewOf(kC, 7002);
  sender.me().config_epoch = 2;
  sender.owner[100] = sender.myself;
  const BusReceiveResult r = Receive(&me, DescribeMyself(sender, BusMessageType::kPing, ""), Inbound());
  EXPECT_EQ(me.owner[100], b);
  ASSERT_TRUE(r.update_about.has_value());
  EXPECT_EQ(*r.update_about, kB);
}

TEST(BusReceiver, AnUpdateMovesTheSlotsOfItsSubject) {
  // The stale node (C) hears from A that B owns slot 100 at epoch 7.
  ClusterView stale = ViewOf(kC, 7002);
  stale.me().config_epoch = 2;
  stale.owner[100] = stale.myself;
  AddPeer(&stale, kA, 7000, 1);
  const int32_t b = AddPeer(&stale, kB, 7001, 1);
  ClusterView informer = ViewOf(kA, 7000);
  const int32_t informer_b = AddPeer(&informer, kB, 7001, 7);
  informer.owner[100] = informer_b;
  const BusReceiveResult r =
      Receive(&stale, DescribeUpdate(informer, informer_b, ""), Outbound(kA));
  EXPECT_EQ(stale.owner[100], b);
  EXPECT_EQ(stale.nodes[b].config_epoch, 7u);
  EXPECT_TRUE(r.my_claim_changed);
}

TEST(BusReceiver, CurrentEpochFollowsTheSender) {
  ClusterView me = ViewOf(kA, 7000);
  AddPeer(&me, kB, 7001, 0);
  me.current_epoch = 2;
  ClusterView sender = ViewOf(kB, 7001);
  sender.me().config_epoch = 3;  // not myself's 0: no collision
  sender.current_epoch = 9;
  Receive(&me, DescribeMyself(sender, BusMessageType::kPing, ""), Inbound());
  EXPECT_EQ(me.current_epoch, 9u);
  EXPECT_EQ(me.me().config_epoch, 0u);
}

TEST(BusReceiver, EqualConfigEpochsMakeTheSmallerIdBump) {
  ClusterView small = ViewOf(kA, 7000);
  small.me().config_epoch = 4;
  small.current_epoch = 4;
  AddPeer(&small, kB, 7001, 4);
  ClusterView large = ViewOf(kB, 7001);
  large.me().config_epoch = 4;
  large.current_epoch = 4;
  AddPeer(&large, kA, 7000, 4);
  const BusReceiveResult small_r =
      Receive(&small, DescribeMyself(large, BusMessageType::kPing, ""), Inbound());
  const BusReceiveResult large_r =
      Receive(&large, DescribeMyself(ViewOf(kA, 7000), BusMessageType::kPing, ""), Inbound());
  EXPECT_TRUE(small_r.my_claim_changed);
  EXPECT_EQ(small.me().config_epoch, 5u);
  EXPECT_EQ(small.current_epoch, 5u);
  EXPECT_FALSE(large_r.my_claim_changed);
  EXPECT_EQ(large.me().config_epoch, 4u);
}

TEST(BusReceiver, GossipFromAKnownSenderStartsHandshakesNotForBannedNodes) {
  ClusterView me = ViewOf(kA, 7000);
  AddPeer(&me, kB, 7001, 0);
  ClusterView sender = ViewOf(kB, 7001);
  AddPeer(&sender, kC, 7002, 0);
  AddPeer(&sender, kD, 7003, 0);
  AddPeer(&sender, kA, 7000, 0);
  std::mt19937_64 random(1);
  BusMessage ping = DescribeMyself(sender, BusMessageType::kPing, "");
  AddGossip(sender, sender.Find(kA), &random, &ping);
  ASSERT_EQ(ping.gossip.size(), 2u);  // min(max(3, 4/10), 4 - 2)
  Receive(&me, ping, Inbound(), [](std::string_view id) { return id == kD; });
  const int32_t c = me.Find(kC);
  ASSERT_NE(c, kNoNode);
  EXPECT_TRUE(me.nodes[c].Has(kNodeHandshake));
  EXPECT_EQ(me.nodes[c].port, 7002);
  EXPECT_EQ(me.Find(kD), kNoNode);
}

TEST(BusReceiver, GossipFromAnUnknownSenderIsIgnored) {
  ClusterView me = ViewOf(kA, 7000);
  ClusterView sender = ViewOf(kB, 7001);
  AddPeer(&sender, kC, 7002, 0);
  AddPeer(&sender, kD, 7003, 0);
  std::mt19937_64 random(1);
  BusMessage ping = DescribeMyself(sender, BusMessageType::kPing, "");
  AddGossip(sender, kNoNode, &random, &ping);
  EXPECT_TRUE(Receive(&me, ping, Inbound()).dropped);
  EXPECT_EQ(me.nodes.size(), 1u);
}

// A distinct id per number, for views of thousands of nodes.
std::string IdOf(size_t n) {
  char hex[41];
  std::snprintf(hex, sizeof(hex), "%040zx", n);
  return hex;
}

TEST(BusReceiver, NodesPastTheCapAreRefusedAndCounted) {
  ClusterView me = ViewOf(kA, 7000);
  AddPeer(&me, kB, 7001, 0);
  while (me.nodes.size() < kMaxClusterNodes - 1) AddPeer(&me, IdOf(me.nodes.size()), 8000, 0);
  // B gossips about three nodes this one never heard of: room for one.
  BusMessage ping = DescribeMyself(ViewOf(kB, 7001), BusMessageType::kPing, "");
  for (int i = 0; i < 3; ++i) {
    ping.gossip.push_back({IdOf(100'000 + i), "127.0.0.9", static_cast<uint16_t>(9000 + i),
                           static_cast<uint16_t>(19000 + i), kBusFlagMaster, 0, 0});
  }
  const BusReceiveResult gossip = Receive(&me, ping, Inbound());
  EXPECT_EQ(gossip.nodes_refused, 2u);
  EXPECT_EQ(me.nodes.size(), kMaxClusterNodes);
  EXPECT_NE(me.Find(IdOf(100'000)), kNoNode);
  EXPECT_EQ(me.Find(IdOf(100'001)), kNoNode);
  // A MEET from a stranger: dropped (its link closes) and counted.
  const BusReceiveResult meet =
      Receive(&me, DescribeMyself(ViewOf(kC, 7002), BusMessageType::kMeet, ""), Inbound());
  EXPECT_TRUE(meet.dropped);
  EXPECT_EQ(meet.nodes_refused, 1u);
  EXPECT_EQ(me.nodes.size(), kMaxClusterNodes);
  EXPECT_EQ(me.Find(kC), kNoNode);
}

// A PING from a known node that says what this node knows already changes
// nothing; deciding on it gives the whole result (the PONG's target, the
// UPDATE to send) without the exclusive lock.
TEST(BusReceiver, DecidingASettledPingChangesNothingAndGivesTheResult) {
  ClusterView me = ViewOf(kA, 7000);
  const int32_t b = AddPeer(&me, kB, 7001, 5);
  const int32_t c = AddPeer(&me, kC, 7002, 9);
  me.current_epoch = 9;
  for (int slot = 0; slot < 10; ++slot) me.owner[slot] = b;
  me.owner[20] = c;
  ClusterView sender = ViewOf(kB, 7001);
  sender.me().config_epoch = 5;
  sender.current_epoch = 9;
  for (int slot = 0; slot < 10; ++slot) sender.owner[slot] = sender.myself;
  sender.owner[20] = sender.myself;  // stale: C holds it at epoch 9
  const BusMessage ping = DescribeMyself(sender, BusMessageType::kPing, "");
  const std::string before = RenderClusterNodes(me);

  const BusReceiveResult decided = DecideBusMessage(me, ping, Inbound(), kNow, nullptr);
  EXPECT_FALSE(decided.changed);
  EXPECT_FALSE(decided.dropped);
  EXPECT_EQ(decided.sender_id, kB);
  EXPECT_EQ(decided.update_about, kC);
  const BusReceiveResult applied = ApplyBusMessage(&me, ping, Inbound(), kNow, nullptr);
  EXPECT_FALSE(applied.changed);
  EXPECT_EQ(applied.update_about, kC);
  EXPECT_EQ(RenderClusterNodes(me), before);

  // A new config epoch is a change: deciding says so and leaves the view.
  BusMessage bumped = ping;
  bumped.config_epoch = 6;
  EXPECT_TRUE(DecideBusMessage(me, bumped, Inbound(), kNow, nullptr).changed);
  EXPECT_EQ(RenderClusterNodes(me), before);
  EXPECT_TRUE(ApplyBusMessage(&me, bumped, Inbound(), kNow, nullptr).changed);
  EXPECT_EQ(me.nodes[b].config_epoch, 6u);
}

// While a reader holds the view (a command rendering CLUSTER NODES, the
// routing gate), a message that changes nothing is still taken in; one
// that changes the view waits for the exclusive lock.
TEST(ReceiveBusMessage, ASettledPingNeedsOnlyTheSharedLock) {
  ClusterView view = ViewOf(kA, 7000);
  AddPeer(&view, kB, 7001, 5);
  view.current_epoch = 5;
  ClusterState state;
  state.Enable(view, nullptr);
  ClusterView sender = ViewOf(kB, 7001);
  sender.me().config_epoch = 5;
  sender.current_epoch = 5;
  const BusMessage settled = DescribeMyself(sender, BusMessageType::kPing, "");
  BusMessage bumped = settled;
  bumped.config_epoch = 6;
  auto receive = [&state](const BusMessage& m) {
    std::string error;
    return ReceiveBusMessage(&state, m, Inbound(), kNow, nullptr, &error);
  };

  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> holding;
  std::thread reader([&] {
    state.Read([&](const ClusterView&) {
      holding.set_value();
      released.wait();
      return 0;
    });
  });
  holding.get_future().wait();
  auto quiet = std::async(std::launch::async, [&] { return receive(settled); });
  const bool quiet_done = quiet.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  auto change = std::async(std::launch::async, [&] { return receive(bumped); });
  const bool change_waited =
      change.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout;
  release.set_value();
  reader.join();
  EXPECT_TRUE(quiet_done) << "a message that changes nothing waited for the exclusive lock";
  EXPECT_TRUE(change_waited);
  EXPECT_FALSE(quiet.get().changed);
  EXPECT_TRUE(change.get().changed);
  EXPECT_EQ(state.Read([](const ClusterView& v) { return v.nodes[v.Find(kB)].config_epoch; }),
            6u);
}

// Three masters serving slots (A myself, B, C): a majority is two.
ClusterView ThreeMasters() {
  ClusterView view = ViewOf(kA, 7000);
  AddPeer(&view, kB, 7001, 2);
  AddPeer(&view, kC, 7002, 3);
  for (size_t slot = 0; slot < kClusterSlots; ++slot) view.owner[slot] = slot % 3;
  view.RefreshHealth(true);
  return view;
}

BusMessage PingFromBGossipingC(uint16_t c_flags) {
  ClusterView b = ViewOf(kB, 7001);
  b.me().config_epoch = 2;
  BusMessage ping = DescribeMyself(b, BusMessageType::kPing, "");
  ping.gossip.push_back({kC, "127.0.0.1", 7002, 17002, c_flags, 0, 0});
  return ping;
}

TEST(BusFailureDetection, AMajorityOfMastersReportingMakesASuspectFail) {
  ClusterView me = ThreeMasters();
  const int32_t c = me.Find(kC);
  // Not suspected here: B's report is kept, nothing fails.
  Receive(&me, PingFromBGossipingC(kBusFlagMaster | kBusFlagPFail), Inbound());
  ASSERT_EQ(me.nodes[c].failure_reports.size(), 1u);
  EXPECT_EQ(me.nodes[c].failure_reports[0].first, kB);
  EXPECT_FALSE(me.nodes[c].Has(kNodeFail));
  // Suspected here too: myself and B are two of three masters.
  me.nodes[c].flags |= kNodePFail;
  const BusReceiveResult r =
      Receive(&me, PingFromBGossipingC(kBusFlagMaster | kBusFlagPFail), Inbound());
  EXPECT_TRUE(me.nodes[c].Has(kNodeFail));
  EXPECT_FALSE(me.nodes[c].Has(kNodePFail));
  EXPECT_EQ(me.nodes[c].fail_time_ms, kNow);
  EXPECT_EQ(r.fail_broadcast, kC);
  EXPECT_TRUE(r.save);
}

TEST(BusFailureDetection, AReportOlderThanTwiceTheTimeoutDoesNotCount) {
  const std::string kE(40, 'e');
  // Five masters: a majority is three.
  auto five = [&](int64_t d_report_at) {
    ClusterView view = ThreeMasters();
    AddPeer(&view, kD, 7003, 4);
    AddPeer(&view, kE, 7004, 5);
    for (size_t slot = 0; slot < kClusterSlots; ++slot) view.owner[slot] = slot % 5;
    view.RefreshHealth(true);
    ClusterNode& c = view.nodes[view.Find(kC)];
    c.flags |= kNodePFail;
    c.failure_reports.emplace_back(kD, d_report_at);
    return view;
  };
  const BusMessage ping = PingFromBGossipingC(kBusFlagMaster | kBusFlagPFail);
  // Myself, B, and D's report 2 x 15 s old: three.
  ClusterView fresh = five(kNow - 2 * 15'000);
  Receive(&fresh, ping, Inbound());
  EXPECT_TRUE(fresh.nodes[fresh.Find(kC)].Has(kNodeFail));
  // One ms older: D's report lapsed, two of three.
  ClusterView stale = five(kNow - 2 * 15'000 - 1);
  Receive(&stale, ping, Inbound());
  EXPECT_FALSE(stale.nodes[stale.Find(kC)].Has(kNodeFail));
  EXPECT_TRUE(stale.nodes[stale.Find(kC)].Has(kNodePFail));
}

TEST(BusFailureDetection, GossipWithoutTheFlagWithdrawsTheReport) {
  ClusterView me = ThreeMasters();
  const int32_t c = me.Find(kC);
  me.nodes[c].failure_reports.emplace_back(kB, kNow - 10);
  Receive(&me, PingFromBGossipingC(kBusFlagMaster), Inbound());
  EXPECT_TRUE(me.nodes[c].failure_reports.empty());
}

TEST(BusFailureDetection, AFailMessageFlagsTheNodeButNeverMyself) {
  ClusterView me = ThreeMasters();
  BusMessage pong = PingFromBGossipingC(kBusFlagMaster);
  pong.type = BusMessageType::kPong;
  pong.fail_about = kC;
  const BusReceiveResult r = Receive(&me, pong, Inbound());
  EXPECT_TRUE(me.nodes[me.Find(kC)].Has(kNodeFail));
  EXPECT_TRUE(r.save);
  EXPECT_TRUE(r.fail_broadcast.empty());  // only the node that decided broadcasts
  pong.fail_about = kA;
  Receive(&me, pong, Inbound());
  EXPECT_FALSE(me.me().Has(kNodeFail));
}

TEST(BusFailureDetection, APongClearsSuspicionAndAFailedMasterAfterTwiceTheTimeout) {
  ClusterView me = ThreeMasters();
  const int32_t c = me.Find(kC);
  ClusterView cv = ViewOf(kC, 7002);
  cv.me().config_epoch = 3;
  const BusMessage pong = DescribeMyself(cv, BusMessageType::kPong, "");
  BusLinkContext link = Outbound(kC);
  link.node_timeout_ms = 2000;
  me.nodes[c].flags |= kNodePFail;
  ApplyBusMessage(&me, pong, link, kNow, nullptr);
  EXPECT_FALSE(me.nodes[c].Has(kNodePFail));
  // Failed 3 s ago, serving slots: not yet (2 x 2 s).
  me.nodes[c].flags |= kNodeFail;
  me.nodes[c].fail_time_ms = kNow - 3000;
  ApplyBusMessage(&me, pong, link, kNow, nullptr);
  EXPECT_TRUE(me.nodes[c].Has(kNodeFail));
  ApplyBusMessage(&me, pong, link, kNow + 1001, nullptr);
  EXPECT_FALSE(me.nodes[c].Has(kNodeFail));
}

TEST(BusSender, GossipIsATenthOfTheNodesAtLeastThree) {
  EXPECT_EQ(GossipCount(2), 0u);
  EXPECT_EQ(GossipCount(4), 2u);
  EXPECT_EQ(GossipCount(10), 3u);
  EXPECT_EQ(GossipCount(100), 10u);
  EXPECT_EQ(GossipCount(200), 20u);
}

}  // namespace
}  // namespace bloomgate
