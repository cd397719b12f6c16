#include "server/cluster_bus/replica_election.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "server/cluster_bus/bus_codec.h"
#include "server/cluster_bus/bus_receiver.h"
#include "server/cluster_bus/bus_sender.h"
#include "../cluster_peer.h"

namespace bloomgate {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;
constexpr int64_t kTimeout = 1000;  // cluster-node-timeout of these views

const std::string kA = std::string(40, 'a');  // myself in the voter's views
const std::string kB = std::string(40, 'b');  // the failing master
const std::string kC = std::string(40, 'c');  // another master
const std::string kR = std::string(40, 'e');  // a replica of B
const std::string kS = std::string(40, 'f');  // another replica of B

int32_t AddNode(ClusterView* view, const std::string& id, uint16_t port, uint32_t flags,
                uint64_t epoch, const std::string& master_id = "") {
  ClusterNode node = testing::MasterPeer(id, port);
  node.flags = flags;
  node.config_epoch = epoch;
  node.master_id = master_id;
  return view->Add(std::move(node));
}

void Own(ClusterView* view, int32_t index, size_t first, size_t last) {
  for (size_t slot = first; slot <= last; ++slot) view->owner[slot] = index;
}

// Three masters A (myself, 0-5460, epoch 1), B (5461-10922, epoch 2, fail)
// and C (10923-16383, epoch 3); R and S replicate B. currentEpoch 3.
struct Cluster {
  ClusterView view;
  int32_t a, b, c, r, s;
};

// That cluster as node `me` sees it.
Cluster ViewAs(const std::string& me) {
  Cluster k;
  k.a = AddNode(&k.view, kA, 7000, kNodeMaster, 1);
  k.b = AddNode(&k.view, kB, 7001, kNodeMaster | kNodeFail, 2);
  k.c = AddNode(&k.view, kC, 7002, kNodeMaster, 3);
  k.r = AddNode(&k.view, kR, 7003, kNodeSlave, 0, kB);
  k.s = AddNode(&k.view, kS, 7004, kNodeSlave, 0, kB);
  k.view.myself = k.view.Find(me);
  k.view.me().flags |= kNodeMyself;
  Own(&k.view, k.a, 0, 5460);
  Own(&k.view, k.b, 5461, 10922);
  Own(&k.view, k.c, 10923, 16383);
  k.view.current_epoch = 3;
  k.view.RefreshHealth(true);
  return k;
}

// Myself is A, a master that votes.
Cluster VoterView() { return ViewAs(kA); }

// What replica `id` of B sends: B's slots at B's config epoch, the
// election's epoch as its currentEpoch.
BusMessage RequestFrom(const std::string& id, uint64_t epoch, uint16_t flags = 0) {
  BusMessage m;
  m.type = BusMessageType::kAuthRequest;
  m.sender_id = id;
  m.port = 7003;
  m.cport = 17003;
  m.flags = kBusFlagReplica;
  m.master_id = kB;
  m.current_epoch = epoch;
  m.config_epoch = 2;
  for (size_t slot = 5461; slot <= 10922; ++slot) m.slots.set(slot);
  m.message_flags = flags;
  return m;
}

// The request as the voter handles it: its epoch taken up (ReceiveBusMessage)
// and then the vote.
VoteRefusal Vote(ClusterView* view, const BusMessage& request, int64_t now = kNow) {
  std::string bytes;
  EncodeBusMessage(request, &bytes);
  BusMessage decoded;
  size_t consumed = 0;
  EXPECT_EQ(DecodeBusMessage(bytes, &decoded, &consumed), BusDecodeStatus::kOk);
  const BusLinkContext link{"127.0.0.1", "127.0.0.1", "", false, kTimeout};
  ApplyBusMessage(view, decoded, link, now, nullptr);
  return CastFailoverVote(view, decoded, now, kTimeout);
}

TEST(FailoverVote, AMasterServingSlotsVotesForAReplicaOfAFailedMaster) {
  Cluster k = VoterView();
  EXPECT_EQ(Vote(&k.view, RequestFrom(kR, 4)), VoteRefusal::kGranted);
  EXPECT_EQ(k.view.current_epoch, 4u);
  EXPECT_EQ(k.view.last_vote_epoch, 4u);
  EXPECT_EQ(k.view.nodes[k.b].voted_time_ms, kNow);
}

// The vote is in nodes.conf, fsynced, once ClusterState::Update returns:
// the bus sends the ACK only after it.
TEST(FailoverVote, TheVoteIsSavedDurablyWithinTheUpdate) {
  Cluster k = VoterView();
  k.view.current_epoch = 4;
  ClusterState state;
  std::vector<std::pair<std::string, bool>> saves;
  state.Enable(k.view, [&saves](const std::string& text, bool durable) {
    saves.emplace_back(text, durable);
    return std::string();
  });
  ASSERT_EQ(state.Save(), "");
  saves.clear();
  VoteRefusal refusal = VoteRefusal::kNotAVoter;
  ASSERT_EQ(state.Update([&](ClusterView& view) {
    refusal = CastFailoverVote(&view, RequestFrom(kR, 4), kNow, kTimeout);
    return refusal == VoteRefusal::kGranted;
  }), "");
  EXPECT_EQ(refusal, VoteRefusal::kGranted);
  ASSERT_EQ(saves.size(), 1u);
  EXPECT_TRUE(saves[0].second);
  EXPECT_NE(saves[0].first.find("lastVoteEpoch 4"), std::string::npos) << saves[0].first;
}

TEST(FailoverVote, TheRequestClaimsNothingAndChangesNoRole) {
  Cluster k = VoterView();
  const ClusterView before = k.view;
  Vote(&k.view, RequestFrom(kR, 4));
  EXPECT_EQ(k.view.owner, before.owner);
  EXPECT_EQ(k.view.nodes[k.r].flags, before.nodes[k.r].flags);
  EXPECT_EQ(k.view.nodes[k.r].master_id, kB);
  EXPECT_EQ(k.view.nodes[k.r].port, 7003);
}

TEST(FailoverVote, OnlyAMasterServingSlotsVotes) {
  Cluster k = VoterView();
  k.view.me().flags = kNodeMyself | kNodeSlave;
  k.view.me().master_id = kC;
  EXPECT_EQ(Vote(&k.view, RequestFrom(kR, 4)), VoteRefusal::kNotAVoter);
  Cluster empty = VoterView();
  Own(&empty.view, empty.c, 0, 5460);  // myself serves nothing
  EXPECT_EQ(Vote(&empty.view, RequestFrom(kR, 4)), VoteRefusal::kNotAVoter);
  EXPECT_EQ(empty.view.last_vote_epoch, 0u);
}

TEST(FailoverVote, ARequestBelowMyCurrentEpochIsRefused) {
  Cluster k = VoterView();
  k.view.current_epoch = 9;
  EXPECT_EQ(Vote(&k.view, RequestFrom(kR, 8)), VoteRefusal::kStaleEpoch);
  EXPECT_EQ(k.view.last_vote_epoch, 0u);
}

TEST(FailoverVote, OneVotePerEpoch) {
  Cluster k = VoterView();
  ASSERT_EQ(Vote(&k.view, RequestFrom(kR, 4)), VoteRefusal::kGranted);
  // Another replica of the same master, the same epoch: no second vote,
  // even once the voted_time window is past.
  EXPECT_EQ(Vote(&k.view, RequestFrom(kS, 4), kNow + 10 * kTimeout), VoteRefusal::kAlreadyVoted);
  EXPECT_EQ(Vote(&k.view, RequestFrom(kR, 4), kNow + 10 * kTimeout), VoteRefusal::kAlreadyVoted);
}

TEST(FailoverVote, AMasterOrAReplicaOfAnUnknownMasterIsRefused) {
  Cluster k = VoterView();
  BusMessage from_master = RequestFrom(kC, 4);
  EXPECT_EQ(Vote(&k.view, from_master), VoteRefusal::kRequesterIsMaster);
  k.view.nodes[k.r].master_id = std::string(40, '9');
  EXPECT_EQ(Vote(&k.view, RequestFrom(kR, 5)), VoteRefusal::kUnknownMaster);
  BusMessage stranger = RequestFrom(std::string(40, '8'), 6);
  EXPECT_EQ(CastFailoverVote(&k.view, stranger, kNow, kTimeout),
            VoteRefusal::kUnknownRequester);
  EXPECT_EQ(k.view.last_vote_epoch, 0u);
}

TEST(FailoverVote, AMasterThatIsUpGetsNoReplicaElectedUnlessForced) {
  Cluster k = VoterView();
  k.view.nodes[k.b].flags = kNodeMaster;
  EXPECT_EQ(Vote(&k.view, RequestFrom(kR, 4)), VoteRefusal::kMasterNotFailing);
  // fail? is this node's suspicion only: not enough.
  k.view.nodes[k.b].flags = kNodeMaster | kNodePFail;
  EXPECT_EQ(Vote(&k.view, RequestFrom(kR, 5)), VoteRefusal::kMasterNotFailing);
  EXPECT_EQ(k.view.last_vote_epoch, 0u);
  // A manual failover's request (FORCEACK) is voted for.
  EXPECT_EQ(Vote(&k.view, RequestFrom(kR, 6, kBusMessageForceAck)), VoteRefusal::kGranted);
  EXPECT_EQ(k.view.last_vote_epoch, 6u);
}

TEST(FailoverVote, NoVoteAboutTheSameMasterWithinTwiceTheNodeTimeout) {
  Cluster k = VoterView();
  ASSERT_EQ(Vote(&k.view, RequestFrom(kR, 4)), VoteRefusal::kGranted);
  // A later epoch, another replica of B, within 2 x node timeout.
  EXPECT_EQ(Vote(&k.view, RequestFrom(kS, 5), kNow + 2 * kTimeout - 1),
            VoteRefusal::kVotedRecently);
  EXPECT_EQ(k.view.last_vote_epoch, 4u);
  // A replica of another master is not held back.
  const int32_t t = AddNode(&k.view, std::string(40, '7'), 7005, kNodeSlave, 0, kC);
  k.view.nodes[k.c].flags |= kNodeFail;
  BusMessage other = RequestFrom(k.view.nodes[t].id, 6);
  other.master_id = kC;
  other.config_epoch = 3;
  other.slots.reset();
  for (size_t slot = 10923; slot <= 16383; ++slot) other.slots.set(slot);
  EXPECT_EQ(Vote(&k.view, other, kNow + 1), VoteRefusal::kGranted);
  // And B's replicas get a vote again once the window is past.
  EXPECT_EQ(Vote(&k.view, RequestFrom(kS, 7), kNow + 2 * kTimeout), VoteRefusal::kGranted);
}

TEST(FailoverVote, AClaimBelowASlotOwnersConfigEpochIsRefused) {
  Cluster k = VoterView();
  BusMessage request = RequestFrom(kR, 4);
  request.slots.set(10923);  // C's, at epoch 3 > the claim's 2
  EXPECT_EQ(Vote(&k.view, request), VoteRefusal::kStaleSlotClaim);
  EXPECT_EQ(k.view.last_vote_epoch, 0u);
  // An owner at the claim's epoch, or below it, does not refuse it.
  request = RequestFrom(kR, 5);
  request.config_epoch = 3;
  request.slots.set(10923);
  EXPECT_EQ(Vote(&k.view, request), VoteRefusal::kGranted);
}

// --- the replica's side ------------------------------------------------------

// Myself is R, a replica of B (failing), with sibling S; A and C are masters.
Cluster ReplicaView() { return ViewAs(kR); }

ElectionInputs At(int64_t now, int64_t offset = 100) {
  ElectionInputs in;
  in.now_ms = now;
  in.node_timeout_ms = kTimeout;
  in.my_offset = offset;
  in.data_age_ms = kTimeout + 500;
  in.repl_ping_period_ms = 10'000;
  in.validity_factor = 10;
  in.random_delay_ms = 250;
  return in;
}

TEST(ReplicaRank, CountsSiblingsWithAGreaterOffset) {
  Cluster k = ReplicaView();
  EXPECT_EQ(ReplicaRank(k.view, 100), 0);
  k.view.nodes[k.s].repl_offset = 100;  // equal: not ahead
  EXPECT_EQ(ReplicaRank(k.view, 100), 0);
  k.view.nodes[k.s].repl_offset = 101;
  EXPECT_EQ(ReplicaRank(k.view, 100), 1);
  // A replica of another master, however far ahead, does not count.
  const int32_t t = AddNode(&k.view, std::string(40, '7'), 7005, kNodeSlave, 0, kC);
  k.view.nodes[t].repl_offset = 1'000'000;
  EXPECT_EQ(ReplicaRank(k.view, 100), 1);
  const int32_t u = AddNode(&k.view, std::string(40, '6'), 7006, kNodeSlave, 0, kB);
  k.view.nodes[u].repl_offset = 500;
  EXPECT_EQ(ReplicaRank(k.view, 100), 2);
  // nofailover siblings never run, so they do not delay anyone.
  k.view.nodes[u].flags |= kNodeNoFailover;
  EXPECT_EQ(ReplicaRank(k.view, 100), 1);
}

TEST(ReplicaElection, TheQuorumIsAMajorityOfTheMastersServingSlots) {
  EXPECT_EQ(ElectionQuorum(1), 1u);
  EXPECT_EQ(ElectionQuorum(2), 2u);
  EXPECT_EQ(ElectionQuorum(3), 2u);
  EXPECT_EQ(ElectionQuorum(4), 3u);
  EXPECT_EQ(ElectionQuorum(5), 3u);
  EXPECT_EQ(ElectionTimeoutMs(500), 2000);
  EXPECT_EQ(ElectionTimeoutMs(5000), 10'000);
}

TEST(ReplicaElection, NothingWhileTheMasterIsUp) {
  Cluster k = ReplicaView();
  k.view.nodes[k.b].flags = kNodeMaster | kNodePFail;
  ReplicaElection e;
  EXPECT_EQ(e.Tick(k.view, At(kNow)), ElectionAction::kNone);
  EXPECT_EQ(e.auth_time_ms(), 0);
}

TEST(ReplicaElection, AFailedMasterIsReplacedAfterTheDelayWithAMajority) {
  Cluster k = ReplicaView();
  ReplicaElection e;
  ASSERT_EQ(e.Tick(k.view, At(kNow)), ElectionAction::kScheduled);
  EXPECT_EQ(e.rank(), 0);
  EXPECT_EQ(e.auth_time_ms(), kNow + 500 + 250);
  EXPECT_EQ(e.Tick(k.view, At(kNow + 749)), ElectionAction::kNone);
  EXPECT_EQ(e.wait(), ElectionWait::kWaitingDelay);
  ASSERT_EQ(e.Tick(k.view, At(kNow + 750)), ElectionAction::kRequestVotes);
  e.VotesRequested(4);
  EXPECT_EQ(e.Tick(k.view, At(kNow + 800)), ElectionAction::kNone);
  EXPECT_EQ(e.wait(), ElectionWait::kWaitingVotes);
  e.OnAck(kA, 4);
  e.OnAck(kA, 4);  // one voter counts once
  EXPECT_EQ(e.votes(), 1u);
  EXPECT_EQ(e.Tick(k.view, At(kNow + 850)), ElectionAction::kNone);
  e.OnAck(kC, 3);  // an older election's vote
  EXPECT_EQ(e.Tick(k.view, At(kNow + 860)), ElectionAction::kNone);
  e.OnAck(kC, 4);
  EXPECT_EQ(e.Tick(k.view, At(kNow + 900)), ElectionAction::kPromote);
}

TEST(ReplicaElection, AReplicaBehindWaitsASecondPerReplicaAheadAndReRanks) {
  Cluster k = ReplicaView();
  k.view.nodes[k.s].repl_offset = 200;
  ReplicaElection e;
  ASSERT_EQ(e.Tick(k.view, At(kNow, 100)), ElectionAction::kScheduled);
  EXPECT_EQ(e.rank(), 1);
  EXPECT_EQ(e.auth_time_ms(), kNow + 500 + 250 + 1000);
  // A second sibling's offset arrives ahead of mine: one more second.
  const int32_t u = AddNode(&k.view, std::string(40, '6'), 7006, kNodeSlave, 0, kB);
  k.view.nodes[u].repl_offset = 300;
  EXPECT_EQ(e.Tick(k.view, At(kNow + 100, 100)), ElectionAction::kNone);
  EXPECT_EQ(e.rank(), 2);
  EXPECT_EQ(e.auth_time_ms(), kNow + 500 + 250 + 2000);
  // A better rank later never shortens the wait.
  k.view.nodes[u].repl_offset = 0;
  EXPECT_EQ(e.Tick(k.view, At(kNow + 200, 100)), ElectionAction::kNone);
  EXPECT_EQ(e.auth_time_ms(), kNow + 500 + 250 + 2000);
  EXPECT_EQ(e.Tick(k.view, At(kNow + 2750, 100)), ElectionAction::kRequestVotes);
}

TEST(ReplicaElection, AnElectionWithoutAMajorityExpiresAndIsTriedAgain) {
  Cluster k = ReplicaView();
  ReplicaElection e;
  ASSERT_EQ(e.Tick(k.view, At(kNow)), ElectionAction::kScheduled);
  const int64_t start = e.auth_time_ms();
  ASSERT_EQ(e.Tick(k.view, At(start)), ElectionAction::kRequestVotes);
  e.VotesRequested(4);
  e.OnAck(kA, 4);
  // The timeout is max(2 x 1000, 2000) = 2000 ms from the start.
  EXPECT_EQ(e.Tick(k.view, At(start + 2000)), ElectionAction::kNone);
  EXPECT_EQ(e.wait(), ElectionWait::kWaitingVotes);
  EXPECT_EQ(e.Tick(k.view, At(start + 2001)), ElectionAction::kNone);
  EXPECT_EQ(e.wait(), ElectionWait::kExpired);
  e.OnAck(kC, 4);  // too late: never counted as a win
  EXPECT_EQ(e.Tick(k.view, At(start + 3000)), ElectionAction::kNone);
  // Retried twice the timeout after the last start, from scratch.
  EXPECT_EQ(e.Tick(k.view, At(start + 4000)), ElectionAction::kNone);
  ASSERT_EQ(e.Tick(k.view, At(start + 4001)), ElectionAction::kScheduled);
  EXPECT_EQ(e.votes(), 0u);
  EXPECT_FALSE(e.requested());
}

TEST(ReplicaElection, DataTooOldRefusesUnlessTheFactorIsZero) {
  Cluster k = ReplicaView();
  ReplicaElection e;
  // Allowed: 10 s ping period + 10 x 1 s, beyond the node timeout itself.
  ElectionInputs in = At(kNow);
  in.data_age_ms = kTimeout + 20'000;
  EXPECT_EQ(e.Tick(k.view, in), ElectionAction::kScheduled);
  ReplicaElection old;
  in.data_age_ms = kTimeout + 20'001;
  EXPECT_EQ(old.Tick(k.view, in), ElectionAction::kNone);
  EXPECT_EQ(old.wait(), ElectionWait::kDataTooOld);
  in.validity_factor = 0;
  EXPECT_EQ(old.Tick(k.view, in), ElectionAction::kScheduled);
}

TEST(ReplicaElection, NoFailoverStopsAnAutomaticElectionOnly) {
  Cluster k = ReplicaView();
  ReplicaElection e;
  ElectionInputs in = At(kNow);
  in.no_failover = true;
  EXPECT_EQ(e.Tick(k.view, in), ElectionAction::kNone);
  EXPECT_EQ(e.auth_time_ms(), 0);
  e.StartManual(kNow + 5000);
  EXPECT_EQ(e.Tick(k.view, in), ElectionAction::kScheduled);
}

TEST(ReplicaElection, AManualOneAsksAtOnceWhateverTheMastersStateAndEndsAtItsDeadline) {
  Cluster k = ReplicaView();
  k.view.nodes[k.b].flags = kNodeMaster;  // up
  k.view.nodes[k.s].repl_offset = 1'000;  // ahead of me: no matter
  ReplicaElection e;
  EXPECT_EQ(e.Tick(k.view, At(kNow)), ElectionAction::kNone);
  e.StartManual(kNow + 5000);
  EXPECT_TRUE(e.manual());
  ElectionInputs in = At(kNow + 10);
  in.data_age_ms = 1'000'000;  // not checked either
  ASSERT_EQ(e.Tick(k.view, in), ElectionAction::kScheduled);
  EXPECT_EQ(e.auth_time_ms(), kNow + 10);
  EXPECT_EQ(e.rank(), 0);
  ASSERT_EQ(e.Tick(k.view, in), ElectionAction::kRequestVotes);
  e.VotesRequested(4);
  e.OnAck(kA, 4);
  e.OnAck(kC, 4);
  EXPECT_EQ(e.Tick(k.view, At(kNow + 20)), ElectionAction::kPromote);
  // Past its deadline, with the master up, there is nothing to do.
  ReplicaElection late;
  late.StartManual(kNow + 5000);
  EXPECT_EQ(late.Tick(k.view, At(kNow + 5001)), ElectionAction::kNone);
  EXPECT_FALSE(late.manual());
}

TEST(ReplicaElection, TheWinnerTakesItsMastersSlotsAtTheElectionsEpoch) {
  Cluster k = ReplicaView();
  ASSERT_TRUE(ReplaceMyMaster(&k.view, 4));
  EXPECT_TRUE(k.view.me().Has(kNodeMaster));
  EXPECT_FALSE(k.view.me().Has(kNodeSlave));
  EXPECT_TRUE(k.view.me().master_id.empty());
  EXPECT_EQ(k.view.me().config_epoch, 4u);
  EXPECT_EQ(k.view.SlotCount(k.r), 10922u - 5461u + 1u);
  EXPECT_EQ(k.view.SlotCount(k.b), 0u);
  EXPECT_EQ(k.view.SlotCount(k.a), 5461u);
  // The old master stays known: a master (failing) with nothing.
  EXPECT_TRUE(k.view.nodes[k.b].Has(kNodeMaster));
  EXPECT_FALSE(ReplaceMyMaster(&k.view, 5));  // a master already
}

// --- the slot-claim rule's role switches --------------------------------------

BusReceiveResult Receive(ClusterView* view, const BusMessage& m) {
  std::string bytes;
  EncodeBusMessage(m, &bytes);
  BusMessage decoded;
  size_t consumed = 0;
  EXPECT_EQ(DecodeBusMessage(bytes, &decoded, &consumed), BusDecodeStatus::kOk);
  return ApplyBusMessage(view, decoded, {"127.0.0.1", "127.0.0.1", "", false, kTimeout}, kNow,
                         nullptr);
}

// R after winning: a master of B's slots at epoch 4.
ClusterView WinnerView() {
  Cluster k = ReplicaView();
  ReplaceMyMaster(&k.view, 4);
  k.view.current_epoch = 4;
  return k.view;
}

// B, back from its crash: a master of its old slots at epoch 2 (A's at 1),
// and R still its replica in its own view.
ClusterView ReturningMasterView() {
  ClusterView b = FreshView(7001, 17001, "127.0.0.1");
  b.me().id = kB;
  b.me().config_epoch = 2;
  const int32_t a = AddNode(&b, kA, 7000, kNodeMaster, 1);
  AddNode(&b, kR, 7003, kNodeSlave, 0, kB);
  Own(&b, a, 0, 5460);
  Own(&b, b.myself, 5461, 10922);
  return b;
}

TEST(SlotClaimRoles, AMasterThatLostItsLastSlotBecomesTheWinnersReplica) {
  ClusterView b = ReturningMasterView();
  const int32_t r = b.Find(kR);
  const BusReceiveResult result =
      Receive(&b, DescribeMyself(WinnerView(), BusMessageType::kPing, ""));
  EXPECT_TRUE(result.save);
  EXPECT_TRUE(result.my_claim_changed);
  EXPECT_EQ(b.SlotCount(b.myself), 0u);
  EXPECT_EQ(b.SlotCount(r), 10922u - 5461u + 1u);
  EXPECT_TRUE(b.me().Has(kNodeSlave));
  EXPECT_FALSE(b.me().Has(kNodeMaster));
  EXPECT_EQ(b.me().master_id, kR);
  EXPECT_TRUE(b.nodes[r].Has(kNodeMaster));
  EXPECT_EQ(b.MasterOf(b.myself), r);
}

TEST(SlotClaimRoles, AnUpdateAboutMyReplicaMakesItMasterAndMeItsReplica) {
  ClusterView b = ReturningMasterView();
  const int32_t r = b.Find(kR);
  b.importing_from[42] = b.Find(kA);
  // A's UPDATE: R owns B's old slots at epoch 4.
  ClusterView a_view = WinnerView();
  a_view.myself = a_view.Find(kA);
  a_view.me().flags |= kNodeMyself;
  BusMessage update = DescribeUpdate(a_view, a_view.Find(kR), "");
  Receive(&b, update);
  EXPECT_TRUE(b.nodes[r].Has(kNodeMaster));
  EXPECT_TRUE(b.nodes[r].master_id.empty());
  EXPECT_EQ(b.nodes[r].config_epoch, 4u);
  EXPECT_EQ(b.SlotCount(r), 10922u - 5461u + 1u);
  EXPECT_TRUE(b.me().Has(kNodeSlave));
  EXPECT_EQ(b.me().master_id, kR);
  EXPECT_EQ(b.importing_from[42], kNoNode);  // a replica has no open slots
}

TEST(SlotClaimRoles, AMasterLosingSomeSlotsStaysMaster) {
  ClusterView b = ReturningMasterView();
  const int32_t r = b.Find(kR);
  Own(&b, b.myself, 5000, 5460);
  Receive(&b, DescribeMyself(WinnerView(), BusMessageType::kPing, ""));
  EXPECT_EQ(b.SlotCount(r), 10922u - 5461u + 1u);
  EXPECT_EQ(b.SlotCount(b.myself), 5461u - 5000u);
  EXPECT_TRUE(b.me().Has(kNodeMaster));
  EXPECT_TRUE(b.me().master_id.empty());
}

TEST(SlotClaimRoles, AReplicaWhoseMasterLostItsLastSlotFollowsTheNewOwner) {
  // S, the other replica of B, hears R's claim.
  ClusterView s = ViewAs(kS).view;
  const int32_t r = s.Find(kR);
  Receive(&s, DescribeMyself(WinnerView(), BusMessageType::kPing, ""));
  EXPECT_TRUE(s.nodes[r].Has(kNodeMaster));
  EXPECT_EQ(s.SlotCount(r), 10922u - 5461u + 1u);
  EXPECT_TRUE(s.me().Has(kNodeSlave));
  EXPECT_EQ(s.me().master_id, kR);
  EXPECT_EQ(s.MasterOf(s.myself), r);
}

TEST(SlotClaimRoles, ATakenSlotOfAnotherShardChangesNoRole) {
  // A hears R's claim: A's own shard lost nothing.
  Cluster k = VoterView();
  Receive(&k.view, DescribeMyself(WinnerView(), BusMessageType::kPing, ""));
  EXPECT_EQ(k.view.SlotCount(k.r), 10922u - 5461u + 1u);
  EXPECT_TRUE(k.view.me().Has(kNodeMaster));
  EXPECT_EQ(k.view.SlotCount(k.a), 5461u);
}

}  // namespace
}  // namespace bloomgate
