#include "server/cluster/cluster_state.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <barrier>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "server/cluster/cluster_config_file.h"
#include "server/cluster/cluster_startup.h"

namespace bloomgate {
namespace {

constexpr std::string_view kPeerA = "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca";
constexpr std::string_view kPeerB = "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1";

ClusterView ThreeNodeView() {
  ClusterView view = FreshView(30001, 40001, "127.0.0.1");
  view.me().id = "07c37dfeb235213a872192d90877d0cd55635b91";
  view.me().config_epoch = 1;
  ClusterNode a;
  a.id = std::string(kPeerA);
  a.ip = "127.0.0.1";
  a.port = 30002;
  a.cport = 40002;
  a.flags = kNodeMaster;
  a.config_epoch = 2;
  a.pong_received_ms = 1426238317239;
  a.link_connected = true;
  ClusterNode b;
  b.id = std::string(kPeerB);
  b.ip = "127.0.0.1";
  b.port = 30003;
  b.cport = 40003;
  b.flags = kNodeSlave | kNodeFail;
  b.master_id = std::string(kPeerA);
  b.config_epoch = 0;
  const int32_t ia = view.Add(a);
  view.Add(b);
  for (size_t s = 0; s <= 5460; ++s) view.owner[s] = view.myself;
  for (size_t s = 5461; s <= 10922; ++s) view.owner[s] = ia;
  view.owner[12000] = view.myself;
  view.migrating_to[42] = ia;
  view.importing_from[6000] = ia;
  view.current_epoch = 2;
  view.last_vote_epoch = 1;
  return view;
}

TEST(ClusterStateTest, NodeIdsAreFortyRandomHexCharacters) {
  const std::string a = RandomNodeId();
  const std::string b = RandomNodeId();
  EXPECT_TRUE(IsValidNodeId(a)) << a;
  EXPECT_EQ(a.size(), 40u);
  EXPECT_NE(a, b);
  EXPECT_FALSE(IsValidNodeId(a.substr(1)));
  EXPECT_FALSE(IsValidNodeId(std::string(39, 'a') + "g"));
}

TEST(ClusterStateTest, AFreshNodeRendersAsRedisDoesBeforeItKnowsItsAddress) {
  ClusterView view = FreshView(6379, 16379, "");
  EXPECT_EQ(RenderClusterNodes(view), view.me().id + " :6379@16379 myself,master - 0 0 0 connected\n");
}

TEST(ClusterStateTest, NodesLinesFollowRedisSevenFormat) {
  const ClusterView view = ThreeNodeView();
  const std::string nodes = RenderClusterNodes(view);
  EXPECT_EQ(nodes,
            "07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30001@40001 myself,master - 0 0 1 "
            "connected 0-5460 12000 [42->-e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca] "
            "[6000-<-e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca]\n"
            "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30002@40002 master - 0 "
            "1426238317239 2 connected 5461-10922\n"
            // A replica shows its master's epoch, and no link means disconnected.
            "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30003@40003 slave,fail "
            "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 0 2 disconnected\n");
}

TEST(ClusterStateTest, ASlotBothMigratingAndImportingShowsAsMigrating) {
  ClusterView view = ThreeNodeView();
  view.importing_from[42] = 1;  // slot 42 already migrates to node 1
  const std::string line = RenderNodeLine(view, view.myself);
  EXPECT_NE(line.find(" [42->-"), std::string::npos) << line;
  EXPECT_EQ(line.find(" [42-<-"), std::string::npos) << line;
}

TEST(ClusterStateTest, FlagsAreListedInRedisOrder) {
  EXPECT_EQ(RenderNodeFlags(0), "noflags");
  EXPECT_EQ(RenderNodeFlags(kNodeNoAddr | kNodeMaster | kNodePFail | kNodeHandshake),
            "master,fail?,handshake,noaddr");
}

TEST(ClusterStateTest, RemovingANodeFreesItsSlotsAndShiftsTheOthers) {
  ClusterView view = ThreeNodeView();
  const int32_t a = view.Find(kPeerA);
  ASSERT_EQ(a, 1);
  view.Remove(a);
  EXPECT_EQ(view.nodes.size(), 2u);
  EXPECT_EQ(view.owner[6000], kNoNode);
  EXPECT_EQ(view.migrating_to[42], kNoNode);
  EXPECT_EQ(view.Find(kPeerB), 1);
  EXPECT_TRUE(view.nodes[1].master_id.empty());
  EXPECT_EQ(view.SlotCount(view.myself), 5462u);  // 0-5460 and 12000
  view.Remove(view.myself);  // myself is never removed
  EXPECT_EQ(view.nodes.size(), 2u);
}

TEST(ClusterConfigFileTest, RoundTripKeepsIdEpochsSlotsAndOpenSlots) {
  ClusterView view = ThreeNodeView();
  // A loaded node has no bus link yet, whatever the file says.
  for (ClusterNode& node : view.nodes) node.link_connected = node.Has(kNodeMyself);
  const std::string text = RenderClusterConfig(view);
  EXPECT_NE(text.find("vars currentEpoch 2 lastVoteEpoch 1\n"), std::string::npos);
  ClusterView loaded;
  std::string error;
  ASSERT_TRUE(ParseClusterConfig(text, &loaded, &error)) << error;
  EXPECT_EQ(RenderClusterConfig(loaded), text);
  EXPECT_EQ(loaded.me().id, view.me().id);
  EXPECT_EQ(loaded.current_epoch, 2u);
  EXPECT_EQ(loaded.last_vote_epoch, 1u);
  EXPECT_EQ(loaded.owner, view.owner);
  EXPECT_EQ(loaded.migrating_to, view.migrating_to);
  EXPECT_EQ(loaded.importing_from, view.importing_from);
}

TEST(ClusterConfigFileTest, HandshakeNodesAreNotSaved) {
  ClusterView view = FreshView(7000, 17000, "");
  ClusterNode provisional;
  provisional.id = RandomNodeId();
  provisional.flags = kNodeHandshake | kNodeMaster;
  view.Add(provisional);
  EXPECT_EQ(RenderClusterConfig(view).find(provisional.id), std::string::npos);
}

TEST(ClusterConfigFileTest, ACorruptFileIsRefusedWithItsLine) {
  const std::string good = RenderClusterConfig(ThreeNodeView());
  struct Case {
    std::string text;
    std::string why;
  };
  const Case cases[] = {
      {good.substr(0, good.size() - 5), "truncated"},
      {"zz" + good.substr(2), "line 1: bad node id"},
      {good.substr(good.find('\n') + 1), "no node is flagged myself"},
      {good + good.substr(0, good.find('\n') + 1), "listed twice"},
      {"vars currentEpoch x lastVoteEpoch 0\n", "line 1: bad number"},
      {good.substr(0, good.find(" connected")) + " connected 16384\n", "bad slot"},
      {good.substr(0, good.find(" myself,master")) + " master,bogus - 0 0 1 connected\n",
       "bad flags"},
  };
  for (const Case& c : cases) {
    ClusterView view;
    std::string error;
    EXPECT_FALSE(ParseClusterConfig(c.text, &view, &error)) << c.text;
    EXPECT_NE(error.find(c.why), std::string::npos) << error;
    EXPECT_EQ(view.myself, kNoNode);
  }
}

TEST(ClusterConfigFileTest, AnOpenSlotNamingThisNodeItselfIsRefused) {
  const std::string me = "07c37dfeb235213a872192d90877d0cd55635b91";
  const std::string line = me + " 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460";
  for (const std::string& marker : {" [42->-" + me + "]", " [9000-<-" + me + "]"}) {
    ClusterView view;
    std::string error;
    EXPECT_FALSE(ParseClusterConfig(line + marker + "\nvars currentEpoch 1 lastVoteEpoch 0\n",
                                    &view, &error))
        << marker;
    EXPECT_NE(error.find("line 1: open slot "), std::string::npos) << error;
    EXPECT_NE(error.find("names this node itself"), std::string::npos) << error;
    EXPECT_EQ(view.myself, kNoNode);
  }
}

TEST(ClusterConfigFileTest, AnAddressWithoutBusPortMeansPortPlusTenThousand) {
  const std::string id = RandomNodeId();
  ClusterView view;
  std::string error;
  ASSERT_TRUE(ParseClusterConfig(id + " 10.0.0.1:7000 myself,master - 0 0 3 connected 1-3\n"
                                 "vars currentEpoch 1 lastVoteEpoch 0\n",
                                 &view, &error))
      << error;
  EXPECT_EQ(view.me().cport, 17000);
  EXPECT_EQ(view.current_epoch, 3u);  // raised to the highest epoch seen
  EXPECT_EQ(view.SlotCount(view.myself), 3u);
}

TEST(ClusterStateTest, UpdateSavesOnlyChangesAndCountsVersions) {
  ClusterState state;
  std::vector<std::string> saved;
  state.Enable(FreshView(7000, 17000, ""), [&](const std::string& text, bool) {
    saved.push_back(text);
    return std::string();
  });
  EXPECT_TRUE(state.enabled());
  EXPECT_EQ(state.Update([](ClusterView&) { return false; }), "");
  EXPECT_TRUE(saved.empty());
  EXPECT_EQ(state.version(), 0u);
  state.Update([](ClusterView& view) {
    view.owner[5] = view.myself;
    return true;
  });
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_NE(saved[0].find(" connected 5\n"), std::string::npos) << saved[0];
  EXPECT_EQ(state.version(), 1u);
  EXPECT_EQ(state.Save(), "");
  EXPECT_EQ(saved.size(), 2u);
}

TEST(ClusterStateTest, ASaveFailureIsReported) {
  ClusterState state;
  state.Enable(FreshView(7000, 17000, ""),
               [](const std::string&, bool) { return std::string("disk full"); });
  EXPECT_EQ(state.Update([](ClusterView& view) {
    view.current_epoch = 1;
    return true;
  }),
            "disk full");
}

// As Redis: nodes.conf is fsynced when an epoch moves (a vote or a config
// epoch must survive a reboot) and on SAVECONFIG; slot changes, the bulk of
// a reshard, are written without fsync.
TEST(ClusterStateTest, OnlyEpochChangesAndSaveConfigAreSavedDurably) {
  ClusterState state;
  std::vector<bool> durable;
  state.Enable(FreshView(7000, 17000, ""), [&](const std::string&, bool sync) {
    durable.push_back(sync);
    return std::string();
  });
  const auto change = [&](const std::function<void(ClusterView&)>& fn) {
    state.Update([&](ClusterView& view) {
      fn(view);
      return true;
    });
    return durable.back();
  };
  EXPECT_TRUE(change([](ClusterView& v) { v.owner[1] = v.myself; }));  // the first save
  EXPECT_FALSE(change([](ClusterView& v) { v.owner[2] = v.myself; }));
  EXPECT_FALSE(change([](ClusterView& v) { v.owner[2] = kNoNode; }));
  EXPECT_TRUE(change([](ClusterView& v) { v.current_epoch = 4; }));
  EXPECT_FALSE(change([](ClusterView& v) { v.owner[3] = v.myself; }));
  EXPECT_TRUE(change([](ClusterView& v) { v.me().config_epoch = 4; }));
  EXPECT_TRUE(change([](ClusterView& v) { v.last_vote_epoch = 4; }));
  EXPECT_FALSE(change([](ClusterView& v) { v.owner[4] = v.myself; }));
  EXPECT_EQ(state.Save(), "");
  EXPECT_TRUE(durable.back());
}

// A failed durable save is tried durably again by the next change.
TEST(ClusterStateTest, AnEpochWhoseSaveFailedIsSavedDurablyNextTime) {
  ClusterState state;
  std::vector<bool> durable;
  bool fail = false;
  state.Enable(FreshView(7000, 17000, ""), [&](const std::string&, bool sync) {
    durable.push_back(sync);
    return fail ? std::string("disk full") : std::string();
  });
  const auto claim = [](int slot) {
    return [slot](ClusterView& v) {
      v.owner[slot] = v.myself;
      return true;
    };
  };
  state.Update(claim(1));
  fail = true;
  EXPECT_EQ(state.Update([](ClusterView& v) {
    v.current_epoch = 2;
    return true;
  }),
            "disk full");
  fail = false;
  state.Update(claim(2));
  EXPECT_TRUE(durable.back());
}

// Readers on several threads see whole updates: the owner of every slot is
// the same node at any moment, as each update moves all of them at once.
TEST(ClusterStateTest, ReadersNeverSeeHalfAnUpdate) {
  ClusterState state;
  ClusterView view = FreshView(7000, 17000, "");
  ClusterNode other;
  other.id = RandomNodeId();
  other.flags = kNodeMaster;
  view.Add(other);
  state.Enable(view, nullptr);
  constexpr int kReaders = 3;
  std::barrier start(kReaders + 1);
  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::atomic<int> reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&] {
      start.arrive_and_wait();
      while (!done.load()) {
        state.Read([&](const ClusterView& v) {
          if (v.owner.front() != v.owner.back()) torn.fetch_add(1);
          return 0;
        });
        reads.fetch_add(1);
        std::this_thread::yield();
      }
    });
  }
  start.arrive_and_wait();
  constexpr int kUpdates = 200;
  for (int i = 0; i < kUpdates; ++i) {
    state.Update([i](ClusterView& v) {
      v.owner.fill(i % 2);
      return true;
    });
  }
  done = true;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(state.version(), static_cast<uint64_t>(kUpdates));
}

TEST(ClusterStateTest, StateIsOkOnlyWithFullCoverageAndAReachableMajority) {
  ClusterView view = ThreeNodeView();
  view.RefreshHealth(/*require_full_coverage=*/true);
  EXPECT_FALSE(view.state_ok);  // slots 10923-16383 have no owner
  EXPECT_EQ(view.size, 2);
  view.RefreshHealth(/*require_full_coverage=*/false);
  EXPECT_TRUE(view.state_ok);
  for (size_t s = 10923; s < kClusterSlots; ++s) view.owner[s] = view.myself;
  view.RefreshHealth(true);
  EXPECT_TRUE(view.state_ok);
  // One of two masters unreachable: no majority (2 / 2 + 1 = 2 needed).
  view.nodes[static_cast<size_t>(view.Find(kPeerA))].flags |= kNodePFail;
  view.RefreshHealth(false);
  EXPECT_FALSE(view.state_ok);
}

TEST(ClusterStateTest, AMasterJustStartedStaysFailForTheWritableDelay) {
  ClusterView view = ThreeNodeView();
  constexpr int64_t kStart = 1'000'000;
  HealthClock clock{.now_ms = kStart, .started_ms = kStart, .rejoin_delay_ms = 500};
  view.RefreshHealth(/*require_full_coverage=*/false, &clock);
  EXPECT_FALSE(view.state_ok);  // it may have been replaced while it was down
  clock.now_ms = kStart + kClusterWritableDelayMs - 1;
  view.RefreshHealth(false, &clock);
  EXPECT_FALSE(view.state_ok);
  clock.now_ms = kStart + kClusterWritableDelayMs;
  view.RefreshHealth(false, &clock);
  EXPECT_TRUE(view.state_ok);
  // A replica serves no writes: it goes ok at once.
  ClusterView replica = ThreeNodeView();
  replica.me().flags = kNodeMyself | kNodeSlave;
  replica.me().master_id = std::string(kPeerA);
  clock.now_ms = kStart;
  replica.RefreshHealth(false, &clock);
  EXPECT_TRUE(replica.state_ok);
}

TEST(ClusterStateTest, AMasterBackFromTheMinorityWaitsTheRejoinDelay) {
  EXPECT_EQ(ClusterRejoinDelayMs(100), kClusterMinRejoinDelayMs);
  EXPECT_EQ(ClusterRejoinDelayMs(1500), 1500);
  EXPECT_EQ(ClusterRejoinDelayMs(15000), kClusterMaxRejoinDelayMs);
  ClusterView view = ThreeNodeView();
  constexpr int64_t kStart = 1'000'000;
  HealthClock clock{.now_ms = kStart + 10'000, .started_ms = kStart, .rejoin_delay_ms = 1500};
  view.RefreshHealth(/*require_full_coverage=*/false, &clock);
  ASSERT_TRUE(view.state_ok);
  // The other master is unreachable: the minority, fail at once.
  ClusterNode& peer = view.nodes[static_cast<size_t>(view.Find(kPeerA))];
  peer.flags |= kNodePFail;
  clock.now_ms += 100;
  view.RefreshHealth(false, &clock);
  EXPECT_FALSE(view.state_ok);
  const int64_t last_minority = clock.now_ms + 3000;
  clock.now_ms = last_minority;
  view.RefreshHealth(false, &clock);  // still the minority: the wait starts here
  peer.flags &= ~kNodePFail;
  clock.now_ms = last_minority + 1499;
  view.RefreshHealth(false, &clock);
  EXPECT_FALSE(view.state_ok);
  clock.now_ms = last_minority + 1500;
  view.RefreshHealth(false, &clock);
  EXPECT_TRUE(view.state_ok);
  // Without a clock (no bus runs) the rule applies at once.
  peer.flags |= kNodePFail;
  view.RefreshHealth(false);
  peer.flags &= ~kNodePFail;
  view.RefreshHealth(false);
  EXPECT_TRUE(view.state_ok);
}

TEST(ClusterStateTest, TheCronTurnsTheStateOkOnceTheDelayIsOver) {
  ClusterState state;
  ClusterView view = ThreeNodeView();
  for (size_t s = 10923; s < kClusterSlots; ++s) view.owner[s] = view.myself;
  state.Enable(view, nullptr);
  ASSERT_TRUE(state.Snapshot().state_ok);
  constexpr int64_t kStart = 1'000'000;
  state.StartHealthDelays(kStart, ClusterRejoinDelayMs(15000));
  EXPECT_FALSE(state.Snapshot().state_ok);
  const uint64_t version = state.version();
  state.RefreshHealthAt(kStart + kClusterWritableDelayMs - 1);
  EXPECT_FALSE(state.Snapshot().state_ok);
  state.RefreshHealthAt(kStart + kClusterWritableDelayMs);
  EXPECT_TRUE(state.Snapshot().state_ok);
  EXPECT_GT(state.version(), version);  // readers' copies are stale
}

class ClusterStartupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("cluster_startup_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    config_.cluster_enabled = true;
    config_.dir = dir_.string();
    config_.port = 7000;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  ServerConfig config_;
};

TEST_F(ClusterStartupTest, ANodeComesBackWithItsIdEpochsAndSlots) {
  std::string id;
  {
    ClusterState state;
    std::string error;
    ASSERT_TRUE(StartCluster(config_, *DefaultFileSystem(), &state, &error)) << error;
    ASSERT_TRUE(std::filesystem::exists(dir_ / "nodes.conf"));
    id = state.my_id();
    EXPECT_EQ(state.Snapshot().me().cport, 17000);
    EXPECT_EQ(state.Update([](ClusterView& view) {
      for (size_t s = 100; s <= 200; ++s) view.owner[s] = view.myself;
      view.me().config_epoch = 7;
      view.current_epoch = 9;
      return true;
    }),
              "");
  }
  ClusterState again;
  std::string error;
  config_.cluster_port = 20000;
  ASSERT_TRUE(StartCluster(config_, *DefaultFileSystem(), &again, &error)) << error;
  const ClusterView view = again.Snapshot();
  EXPECT_EQ(view.me().id, id);
  EXPECT_EQ(view.me().config_epoch, 7u);
  EXPECT_EQ(view.current_epoch, 9u);
  EXPECT_EQ(view.SlotCount(view.myself), 101u);
  EXPECT_EQ(view.me().cport, 20000);  // this start's configuration
}

TEST_F(ClusterStartupTest, ACorruptFileRefusesTheStartAndIsLeftAsItWas) {
  {
    std::ofstream out(dir_ / "nodes.conf");
    out << "this is not a nodes file\n";
  }
  ClusterState state;
  std::string error;
  EXPECT_FALSE(StartCluster(config_, *DefaultFileSystem(), &state, &error));
  EXPECT_NE(error.find("corrupted cluster config file"), std::string::npos) << error;
  EXPECT_NE(error.find("line 1"), std::string::npos) << error;
  EXPECT_FALSE(state.enabled());
  std::ifstream in(dir_ / "nodes.conf");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "this is not a nodes file");
}

TEST_F(ClusterStartupTest, APortWithoutRoomForTheDefaultBusPortIsRefused) {
  config_.port = 55536;
  ClusterState state;
  std::string error;
  EXPECT_FALSE(StartCluster(config_, *DefaultFileSystem(), &state, &error));
  EXPECT_NE(error.find("55535 or less"), std::string::npos) << error;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "nodes.conf"));
  config_.cluster_port = 16000;  // an explicit bus port is fine
  EXPECT_TRUE(StartCluster(config_, *DefaultFileSystem(), &state, &error)) << error;
  EXPECT_EQ(state.Snapshot().me().cport, 16000);
}

TEST_F(ClusterStartupTest, WithTheClusterOffNothingIsWritten) {
  config_.cluster_enabled = false;
  ClusterState state;
  std::string error;
  EXPECT_TRUE(StartCluster(config_, *DefaultFileSystem(), &state, &error));
  EXPECT_FALSE(state.enabled());
  EXPECT_FALSE(std::filesystem::exists(dir_ / "nodes.conf"));
}

}  // namespace
}  // namespace bloomgate
