// CLUSTER's subcommands and the routing gate, in process: the texts are
// Redis 7.0's (cluster.c); the peers a bus would have met are added to the
// view directly.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "server/base/key_slot.h"
#include "server/cluster/cluster_state.h"
#include "server/commands/cluster/cluster_commands.h"
#include "server/commands/errors.h"
#include "../cluster_peer.h"
#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

constexpr std::string_view kPeer = "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca";

// A key whose slot is `slot` ("k<n>" for the first n that hashes there).
std::string KeyInSlot(uint16_t slot, std::string_view tag = "") {
  for (int n = 0;; ++n) {
    std::string key = "k" + std::to_string(n);
    if (KeySlot(key) == slot) return tag.empty() ? key : "{" + key + "}" + std::string(tag);
  }
}

class ClusterCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = MakeServer();
    server_->cluster.Enable(FreshView(7000, 17000, "127.0.0.1"), nullptr);
  }

  // Myself owns 0-5460; the peer (127.0.0.1:7001, a master) the rest: the
  // cluster is ok.
  void AddPeerOwningTheRest() {
    server_->cluster.Update([](ClusterView& view) {
      ClusterNode peer = MasterPeer(kPeer, 7001);
      peer.config_epoch = 2;
      const int32_t index = view.Add(peer);
      for (size_t s = 0; s < kClusterSlots; ++s) view.owner[s] = s <= 5460 ? view.myself : index;
      // As gossip would have it: currentEpoch covers every epoch seen.
      view.current_epoch = std::max<uint64_t>(view.current_epoch, 2);
      return true;
    });
  }

  std::string MyId() { return server_->cluster.my_id(); }

  std::unique_ptr<ServerContext> server_;
};

// A replica's full sync streams into its keyspace, so it loads for the
// whole transfer; redis-cli --cluster create --cluster-replicas reads each
// replica's CLUSTER NODES right after its REPLICATE. Every read of the view
// answers then; the keyspace's commands answer -LOADING.
TEST_F(ClusterCommandsTest, ReadsOfTheViewAnswerWhileTheDataLoads) {
  Session s(server_.get());
  const std::string nodes = s.Run({"CLUSTER", "NODES"});
  const std::string myid = s.Run({"CLUSTER", "MYID"});
  server_->durability->BeginLoading();
  EXPECT_EQ(s.Run({"CLUSTER", "NODES"}), nodes);
  EXPECT_EQ(s.Run({"CLUSTER", "MYID"}), myid);
  EXPECT_EQ(s.Run({"CLUSTER", "KEYSLOT", "foo"}), Int(12182));
  for (std::string sub : {"INFO", "SLOTS", "SHARDS"}) {
    EXPECT_NE(s.Run({"CLUSTER", sub}), Err(errors::kLoading)) << sub;
  }
  EXPECT_EQ(s.Run({"DBSIZE"}), Err(errors::kLoading));
  EXPECT_EQ(s.Run({"CLUSTER", "ADDSLOTS", "1"}), Err(errors::kLoading));
  server_->durability->EndLoading();
  EXPECT_EQ(s.Run({"DBSIZE"}), Int(0));
}

TEST(ClusterDisabledTest, EveryClusterCommandSaysSoAndKeysAreServed) {
  auto server = MakeServer();
  Session s(server.get());
  const std::string disabled = Err(errors::kClusterDisabled);
  EXPECT_EQ(s.Run({"CLUSTER", "INFO"}), disabled);
  EXPECT_EQ(s.Run({"CLUSTER", "KEYSLOT", "foo"}), disabled);
  EXPECT_EQ(s.Run({"CLUSTER", "HELP"}), disabled);
  EXPECT_EQ(s.Run({"ASKING"}), disabled);
  EXPECT_EQ(s.Run({"READONLY"}), disabled);
  EXPECT_EQ(s.Run({"READWRITE"}), disabled);
  EXPECT_EQ(s.Run({"BF.ADD", "a", "x"}), Int(1));
  EXPECT_EQ(s.Run({"DEL", "a", "b"}), Int(1));
  EXPECT_NE(s.Run({"INFO", "cluster"}).find("cluster_enabled:0\r\n"), std::string::npos);
}

TEST_F(ClusterCommandsTest, KeySlotAndMyId) {
  Session s(server_.get());
  EXPECT_EQ(s.Run({"CLUSTER", "KEYSLOT", "foo"}), Int(12182));
  EXPECT_EQ(s.Run({"CLUSTER", "KEYSLOT", "{user1000}.following"}), Int(3443));
  EXPECT_EQ(s.Run({"CLUSTER", "MYID"}), Bulk(MyId()));
  EXPECT_NE(s.Run({"INFO", "cluster"}).find("cluster_enabled:1\r\n"), std::string::npos);
}

TEST_F(ClusterCommandsTest, AddAndDeleteSlotsWithRedisChecks) {
  Session s(server_.get());
  EXPECT_EQ(s.Run({"CLUSTER", "ADDSLOTS", "1", "x"}), Err(errors::kInvalidSlot));
  EXPECT_EQ(s.Run({"CLUSTER", "ADDSLOTS", "16384"}), Err(errors::kInvalidSlot));
  EXPECT_EQ(s.Run({"CLUSTER", "ADDSLOTS", "1", "1"}), Err("ERR Slot 1 specified multiple times"));
  EXPECT_EQ(s.Run({"CLUSTER", "ADDSLOTS", "5", "7"}), kOk);
  EXPECT_EQ(s.Run({"CLUSTER", "ADDSLOTS", "6", "5"}), Err("ERR Slot 5 is already busy"));
  EXPECT_EQ(s.Run({"CLUSTER", "DELSLOTS", "8"}), Err("ERR Slot 8 is already unassigned"));
  EXPECT_EQ(s.Run({"CLUSTER", "ADDSLOTSRANGE", "10", "5"}),
            Err("ERR start slot number 10 is greater than end slot number 5"));
  EXPECT_EQ(s.Run({"CLUSTER", "ADDSLOTSRANGE", "1"}),
            Err("ERR wrong number of arguments for 'cluster|addslotsrange' command"));
  EXPECT_EQ(s.Run({"CLUSTER", "ADDSLOTSRANGE", "1", "2", "3"}),
            Err("ERR wrong number of arguments for 'cluster|addslotsrange' command"));
  EXPECT_EQ(s.Run({"CLUSTER", "ADDSLOTSRANGE", "8", "9", "0", "3"}), kOk);
  EXPECT_EQ(s.Run({"CLUSTER", "DELSLOTSRANGE", "0", "1"}), kOk);
  EXPECT_EQ(s.Run({"CLUSTER", "DELSLOTS", "9"}), kOk);
  // A refused command changed nothing: 2-3, 5, 7-8 remain.
  EXPECT_EQ(s.Run({"CLUSTER", "NODES"}),
            Bulk(MyId() + " 127.0.0.1:7000@17000 myself,master - 0 0 0 connected 2-3 5 7-8\n"));
  const std::string info = s.Run({"CLUSTER", "INFO"});
  EXPECT_NE(info.find("cluster_state:fail\r\ncluster_slots_assigned:5\r\ncluster_slots_ok:5\r\n"
                      "cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:1\r\n"
                      "cluster_size:1\r\ncluster_current_epoch:0\r\ncluster_my_epoch:0\r\n"
                      "cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n"
                      "total_cluster_links_buffer_limit_exceeded:0\r\ncluster_nodes_refused:0\r\n"),
            std::string::npos)
      << info;
  EXPECT_EQ(s.Run({"CLUSTER", "FLUSHSLOTS"}), kOk);
  EXPECT_EQ(s.Run({"CLUSTER", "ADDSLOTSRANGE", "0", "16383"}), kOk);
  EXPECT_NE(s.Run({"CLUSTER", "INFO"}).find("cluster_state:ok\r\n"), std::string::npos);
}

TEST_F(ClusterCommandsTest, InfoCountsTheBusMessagesByType) {
  server_->cluster.counters().CountSent(ClusterMessageType::kPing);
  server_->cluster.counters().CountSent(ClusterMessageType::kPing);
  server_->cluster.counters().CountReceived(ClusterMessageType::kPong);
  const std::string info = Session(server_.get()).Run({"CLUSTER", "INFO"});
  EXPECT_NE(info.find("cluster_stats_messages_ping_sent:2\r\ncluster_stats_messages_sent:2\r\n"
                      "cluster_stats_messages_pong_received:1\r\n"
                      "cluster_stats_messages_received:1\r\n"),
            std::string::npos)
      << info;
}

TEST_F(ClusterCommandsTest, EpochsFollowRedisRules) {
  Session s(server_.get());
  EXPECT_EQ(s.Run({"CLUSTER", "SET-CONFIG-EPOCH", "-1"}),
            Err("ERR Invalid config epoch specified: -1"));
  EXPECT_EQ(s.Run({"CLUSTER", "SET-CONFIG-EPOCH", "x"}), Err(errors::kNotInteger));
  EXPECT_EQ(s.Run({"CLUSTER", "SET-CONFIG-EPOCH", "5"}), kOk);
  EXPECT_EQ(s.Run({"CLUSTER", "SET-CONFIG-EPOCH", "6"}), Err(errors::kConfigEpochNonZero));
  EXPECT_EQ(s.Run({"CLUSTER", "BUMPEPOCH"}), Simple("STILL 5"));
  AddPeerOwningTheRest();
  server_->cluster.Update([](ClusterView& view) {
    view.nodes[1].config_epoch = 7;
    return true;
  });
  EXPECT_EQ(s.Run({"CLUSTER", "BUMPEPOCH"}), Simple("BUMPED 6"));  // currentEpoch 5 + 1
  EXPECT_EQ(s.Run({"CLUSTER", "SET-CONFIG-EPOCH", "9"}), Err(errors::kConfigEpochOtherNodes));
}

TEST_F(ClusterCommandsTest, SetSlotChecksInRedisOrder) {
  AddPeerOwningTheRest();
  Session s(server_.get());
  const std::string unknown(40, 'a');
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "x", "STABLE"}), Err(errors::kInvalidSlot));
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "0", "BOGUS"}), Err(errors::kInvalidSetSlot));
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "0", "STABLE", "x"}), Err(errors::kInvalidSetSlot));
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "0", "IMPORTING", unknown}),
            Err("ERR I'm already the owner of hash slot 0"));
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "9000", "IMPORTING", unknown}),
            Err("ERR I don't know about node " + unknown));
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "9000", "MIGRATING", std::string(kPeer)}),
            Err("ERR I'm not the owner of hash slot 9000"));
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "0", "MIGRATING", unknown}),
            Err("ERR I don't know about node " + unknown));
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "0", "NODE", unknown}), Err("ERR Unknown node " + unknown));
  const std::string key = KeyInSlot(0);
  EXPECT_EQ(s.Run({"BF.ADD", key, "x"}), Int(1));
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "0", "NODE", std::string(kPeer)}),
            Err("ERR Can't assign hashslot 0 to a different node while I still hold keys for "
                "this hash slot."));
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "1", "MIGRATING", std::string(kPeer)}), kOk);
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "9000", "IMPORTING", std::string(kPeer)}), kOk);
  const std::string nodes = s.Run({"CLUSTER", "NODES"});
  EXPECT_NE(nodes.find(" 0-5460 [1->-" + std::string(kPeer) + "] [9000-<-" + std::string(kPeer) +
                       "]\n"),
            std::string::npos)
      << nodes;
  // Taking an imported slot bumps this node's epoch past every other.
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "9000", "NODE", MyId()}), kOk);
  const ClusterView view = server_->cluster.Snapshot();
  EXPECT_EQ(view.owner[9000], view.myself);
  EXPECT_EQ(view.importing_from[9000], kNoNode);
  EXPECT_EQ(view.me().config_epoch, 3u);
  // An empty migrating slot given away closes its migration.
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "1", "NODE", std::string(kPeer)}), kOk);
  EXPECT_EQ(server_->cluster.Snapshot().migrating_to[1], kNoNode);
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "9000", "STABLE"}), kOk);
}

// What setslot_node_counted_hook runs (a plain function pointer).
std::function<void()>* counted_hook_body = nullptr;
void RunCountedHook() { (*counted_hook_body)(); }

TEST_F(ClusterCommandsTest, AWriteRacingSetSlotNodeIsNeverLeftInTheSlotGivenAway) {
  AddPeerOwningTheRest();
  const std::string key = KeyInSlot(7);  // slot 7 is this node's
  std::atomic<bool> added{false};
  std::string add_reply;
  std::thread adder;
  // Right after SETSLOT counted the slot's (no) keys: a write routed here
  // now, given half a second to land before the slot changes hands.
  std::function<void()> body = [&] {
    adder = std::thread([&] {
      Session w(server_.get(), /*worker=*/1);
      add_reply = w.Run({"BF.ADD", key, "x"});
      added.store(true);
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (!added.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  counted_hook_body = &body;
  setslot_node_counted_hook = &RunCountedHook;
  Session s(server_.get());
  const std::string reply = s.Run({"CLUSTER", "SETSLOT", "7", "NODE", std::string(kPeer)});
  setslot_node_counted_hook = nullptr;
  adder.join();
  const ClusterView view = server_->cluster.Snapshot();
  const bool kept = server_->keyspace.Peek(MakeKeyRef(key), NowMs()) != nullptr;
  if (view.owner[7] == view.myself) {
    // The write landed first: SETSLOT saw its key and refused.
    EXPECT_EQ(reply, Err(errors::SlotStillHasKeys(7)));
    EXPECT_TRUE(kept);
  } else {
    // The slot went first: the write was redirected, no key stayed behind.
    EXPECT_EQ(reply, kOk);
    EXPECT_FALSE(kept) << "a key orphaned in slot 7, now the peer's; the write said " << add_reply;
    EXPECT_EQ(add_reply, Err("MOVED 7 127.0.0.1:7001"));
  }
}

TEST_F(ClusterCommandsTest, SetSlotNeverOpensASlotTowardThisNodeItself) {
  AddPeerOwningTheRest();
  Session s(server_.get());
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "1", "MIGRATING", MyId()}),
            Err("ERR I can't migrate hash slot 1 to myself"));
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "9000", "IMPORTING", MyId()}),
            Err("ERR I can't import hash slot 9000 from myself"));
  const ClusterView view = server_->cluster.Snapshot();
  EXPECT_EQ(view.migrating_to[1], kNoNode);
  EXPECT_EQ(view.importing_from[9000], kNoNode);
}

TEST_F(ClusterCommandsTest, RoutingRedirectsToTheOwner) {
  AddPeerOwningTheRest();
  Session s(server_.get());
  const std::string mine = KeyInSlot(100);
  const std::string theirs = KeyInSlot(9000);
  EXPECT_EQ(s.Run({"BF.ADD", mine, "x"}), Int(1));
  EXPECT_EQ(s.Run({"BF.ADD", theirs, "x"}), Err("MOVED 9000 127.0.0.1:7001"));
  EXPECT_EQ(s.Run({"BF.EXISTS", theirs, "x"}), Err("MOVED 9000 127.0.0.1:7001"));
  // READONLY serves reads only on a replica of the owner.
  EXPECT_EQ(s.Run({"READONLY"}), kOk);
  EXPECT_EQ(s.Run({"BF.EXISTS", theirs, "x"}), Err("MOVED 9000 127.0.0.1:7001"));
  EXPECT_EQ(s.Run({"READWRITE"}), kOk);
  EXPECT_EQ(s.Run({"DEL", mine, theirs}), Err(errors::kCrossSlot));
  EXPECT_EQ(s.Run({"DEL", KeyInSlot(100, "a"), KeyInSlot(100, "b")}), Int(0));
  // Keyless commands are never redirected.
  EXPECT_EQ(s.Run({"PING"}), Simple("PONG"));
  EXPECT_EQ(s.Run({"DBSIZE"}), Int(1));
}

TEST_F(ClusterCommandsTest, AnUnservedSlotOrAFailedStateIsClusterDown) {
  AddPeerOwningTheRest();
  Session s(server_.get());
  EXPECT_EQ(s.Run({"CLUSTER", "DELSLOTS", "200"}), kOk);
  EXPECT_EQ(s.Run({"BF.ADD", KeyInSlot(200), "x"}), Err(errors::kSlotNotServed));
  // Slot 200 unowned: with full coverage required, the cluster is down.
  EXPECT_EQ(s.Run({"BF.ADD", KeyInSlot(100), "x"}), Err(errors::kClusterDown));
  EXPECT_EQ(s.Run({"CONFIG", "SET", "cluster-require-full-coverage", "no"}), kOk);
  EXPECT_EQ(s.Run({"BF.ADD", KeyInSlot(100), "x"}), Int(1));
}

// cluster-allow-reads-when-down: with the state fail, reads of owned slots
// are served and writes refused with Redis's read-only text; a transaction
// holding a write is refused whole.
TEST_F(ClusterCommandsTest, AllowReadsWhenDownServesOnlyReads) {
  AddPeerOwningTheRest();
  Session s(server_.get());
  const std::string key = KeyInSlot(100);
  EXPECT_EQ(s.Run({"BF.ADD", key, "x"}), Int(1));
  server_->cluster.Update([](ClusterView& view) {
    view.nodes[static_cast<size_t>(view.Find(kPeer))].flags |= kNodeFail;
    return true;
  });
  EXPECT_EQ(s.Run({"BF.EXISTS", key, "x"}), Err(errors::kClusterDown));
  EXPECT_EQ(s.Run({"CONFIG", "GET", "cluster-allow-reads-when-down"}),
            Arr(2) + Bulk("cluster-allow-reads-when-down") + Bulk("no"));
  EXPECT_EQ(s.Run({"CONFIG", "SET", "cluster-allow-reads-when-down", "yes"}), kOk);
  EXPECT_EQ(s.Run({"BF.EXISTS", key, "x"}), Int(1));
  EXPECT_EQ(s.Run({"BF.ADD", key, "y"}), Err(errors::kClusterDownReadOnly));
  EXPECT_EQ(s.Run({"MULTI"}), kOk);
  EXPECT_EQ(s.Run({"BF.EXISTS", key, "x"}), Simple("QUEUED"));
  EXPECT_EQ(s.Run({"BF.ADD", key, "y"}), Err(errors::kClusterDownReadOnly));
  EXPECT_EQ(s.Run({"EXEC"}),
            Err("EXECABORT Transaction discarded because of previous errors."));
  EXPECT_EQ(s.Run({"CONFIG", "SET", "cluster-allow-reads-when-down", "no"}), kOk);
  EXPECT_EQ(s.Run({"BF.EXISTS", key, "x"}), Err(errors::kClusterDown));
}

// CLUSTER FAILOVER's checks, Redis's texts in its order; without a bus
// (an in-process server) an accepted one says the bus is down.
TEST_F(ClusterCommandsTest, FailoverChecksRoleMasterAndItsHealth) {
  AddPeerOwningTheRest();
  Session s(server_.get());
  EXPECT_EQ(s.Run({"CLUSTER", "FAILOVER", "NOW"}), Err(errors::kSyntax));
  EXPECT_EQ(s.Run({"CLUSTER", "FAILOVER"}), Err(errors::kFailoverOnMaster));
  EXPECT_EQ(s.Run({"CLUSTER", "FAILOVER", "TAKEOVER"}), Err(errors::kFailoverOnMaster));
  EXPECT_EQ(s.Run({"CLUSTER", "FAILOVER", "FORCE", "X"}), WrongArity("cluster|failover"));
  server_->cluster.Update([](ClusterView& view) {
    for (int32_t& owner : view.owner) {
      if (owner == view.myself) owner = view.Find(kPeer);
    }
    view.me().flags = (view.me().flags & ~kNodeMaster) | kNodeSlave;
    view.me().master_id = std::string(40, 'f');
    return true;
  });
  EXPECT_EQ(s.Run({"CLUSTER", "FAILOVER", "FORCE"}), Err(errors::kFailoverMasterUnknown));
  server_->cluster.Update([](ClusterView& view) {
    view.me().master_id = std::string(kPeer);
    view.nodes[static_cast<size_t>(view.Find(kPeer))].flags |= kNodePFail;
    return true;
  });
  EXPECT_EQ(s.Run({"CLUSTER", "FAILOVER"}), Err(errors::kFailoverMasterDown));
  EXPECT_EQ(s.Run({"CLUSTER", "FAILOVER", "force"}), Err(errors::kClusterBusDown));
  server_->cluster.Update([](ClusterView& view) {
    view.nodes[static_cast<size_t>(view.Find(kPeer))].flags &= ~kNodePFail;
    view.nodes[static_cast<size_t>(view.Find(kPeer))].link_connected = false;
    return true;
  });
  EXPECT_EQ(s.Run({"CLUSTER", "FAILOVER"}), Err(errors::kFailoverMasterDown));
}

TEST_F(ClusterCommandsTest, AMigratingSlotAsksForMissingKeys) {
  AddPeerOwningTheRest();
  Session s(server_.get());
  const std::string here = KeyInSlot(300, "a");
  const std::string gone = KeyInSlot(300, "b");
  EXPECT_EQ(s.Run({"BF.ADD", here, "x"}), Int(1));
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "300", "MIGRATING", std::string(kPeer)}), kOk);
  EXPECT_EQ(s.Run({"BF.EXISTS", here, "x"}), Int(1));
  EXPECT_EQ(s.Run({"BF.ADD", gone, "x"}), Err("ASK 300 127.0.0.1:7001"));
  EXPECT_EQ(s.Run({"DEL", here, gone}), Err(errors::kTryAgain));
}

TEST_F(ClusterCommandsTest, AnImportingSlotServesOnlyAfterAsking) {
  AddPeerOwningTheRest();
  Session s(server_.get());
  const std::string key = KeyInSlot(9500, "a");
  EXPECT_EQ(s.Run({"CLUSTER", "SETSLOT", "9500", "IMPORTING", std::string(kPeer)}), kOk);
  EXPECT_EQ(s.Run({"BF.ADD", key, "x"}), Err("MOVED 9500 127.0.0.1:7001"));
  EXPECT_EQ(s.Run({"ASKING"}), kOk);
  EXPECT_EQ(s.Run({"BF.ADD", key, "x"}), Int(1));
  // ASKING lasted one command.
  EXPECT_EQ(s.Run({"BF.EXISTS", key, "x"}), Err("MOVED 9500 127.0.0.1:7001"));
  // Several keys, some not imported yet: TRYAGAIN even after ASKING.
  EXPECT_EQ(s.Run({"ASKING"}), kOk);
  EXPECT_EQ(s.Run({"DEL", key, KeyInSlot(9500, "b")}), Err(errors::kTryAgain));
}

TEST_F(ClusterCommandsTest, TransactionsAreRoutedWhenQueuedAndAtExec) {
  AddPeerOwningTheRest();
  Session s(server_.get());
  const std::string mine = KeyInSlot(100);
  EXPECT_EQ(s.Run({"MULTI"}), kOk);
  EXPECT_EQ(s.Run({"BF.ADD", KeyInSlot(9000), "x"}), Err("MOVED 9000 127.0.0.1:7001"));
  EXPECT_EQ(s.Run({"EXEC"}), Err(errors::kExecAbort));
  // Served when queued, moved away before EXEC: EXEC's reply is the redirect.
  EXPECT_EQ(s.Run({"MULTI"}), kOk);
  EXPECT_EQ(s.Run({"BF.ADD", mine, "x"}), kQueued);
  server_->cluster.Update([](ClusterView& view) {
    view.owner[100] = 1;
    return true;
  });
  EXPECT_EQ(s.Run({"EXEC"}), Err("MOVED 100 127.0.0.1:7001"));
  EXPECT_FALSE(s.client().in_multi);
  EXPECT_EQ(s.Run({"EXISTS", mine}), Err("MOVED 100 127.0.0.1:7001"));
  // One transaction, two slots: CROSSSLOT at EXEC.
  EXPECT_EQ(s.Run({"MULTI"}), kOk);
  EXPECT_EQ(s.Run({"BF.ADD", KeyInSlot(101), "x"}), kQueued);
  EXPECT_EQ(s.Run({"BF.ADD", KeyInSlot(102), "x"}), kQueued);
  EXPECT_EQ(s.Run({"EXEC"}), Err(errors::kCrossSlot));
}

TEST_F(ClusterCommandsTest, FlushSlotsAndResetRefuseAMasterWithKeys) {
  Session s(server_.get());
  EXPECT_EQ(s.Run({"CLUSTER", "ADDSLOTSRANGE", "0", "16383"}), kOk);
  EXPECT_EQ(s.Run({"BF.ADD", "a", "x"}), Int(1));
  EXPECT_EQ(s.Run({"CLUSTER", "FLUSHSLOTS"}), Err(errors::kFlushSlotsNotEmpty));
  EXPECT_EQ(s.Run({"CLUSTER", "RESET"}), Err(errors::kResetWithKeys));
  EXPECT_EQ(s.Run({"CLUSTER", "RESET", "MEDIUM"}), Err(errors::kSyntax));
  EXPECT_EQ(s.Run({"DEL", "a"}), Int(1));
  EXPECT_EQ(s.Run({"CLUSTER", "SET-CONFIG-EPOCH", "4"}), kOk);
  const std::string id = MyId();
  EXPECT_EQ(s.Run({"CLUSTER", "RESET", "SOFT"}), kOk);
  EXPECT_EQ(MyId(), id);
  EXPECT_EQ(server_->cluster.Snapshot().SlotCount(0), 0u);
  EXPECT_EQ(s.Run({"CLUSTER", "RESET", "HARD"}), kOk);
  EXPECT_NE(MyId(), id);
  EXPECT_EQ(server_->cluster.Snapshot().me().config_epoch, 0u);
}

TEST_F(ClusterCommandsTest, SlotsAndShardsListOwnersAndRanges) {
  AddPeerOwningTheRest();
  Session s(server_.get());
  const std::string me = MyId();
  EXPECT_EQ(s.Run({"CLUSTER", "SLOTS"}),
            Arr(2) + Arr(3) + Int(0) + Int(5460) + Arr(4) + Bulk("127.0.0.1") + Int(7000) +
                Bulk(me) + Arr(0) + Arr(3) + Int(5461) + Int(16383) + Arr(4) +
                Bulk("127.0.0.1") + Int(7001) + Bulk(kPeer) + Arr(0));
  // The whole reply: a map header that miscounts its pairs desynchronises
  // every later reply on the connection. Seven fields a node, as redis-server
  // 7.0.15 answers with no hostname set.
  auto node = [](std::string_view id, int port, std::string_view health) {
    return Arr(14) + Bulk("id") + Bulk(id) + Bulk("port") + Int(port) + Bulk("ip") +
           Bulk("127.0.0.1") + Bulk("endpoint") + Bulk("127.0.0.1") + Bulk("role") +
           Bulk("master") + Bulk("replication-offset") + Int(0) + Bulk("health") + Bulk(health);
  };
  EXPECT_EQ(s.Run({"CLUSTER", "SHARDS"}),
            Arr(2) + Arr(4) + Bulk("slots") + Arr(2) + Int(0) + Int(5460) + Bulk("nodes") +
                Arr(1) + node(me, 7000, "online") + Arr(4) + Bulk("slots") + Arr(2) +
                Int(5461) + Int(16383) + Bulk("nodes") + Arr(1) + node(kPeer, 7001, "online"));
}

TEST_F(ClusterCommandsTest, FailureReportsAndHelp) {
  AddPeerOwningTheRest();
  Session s(server_.get());
  EXPECT_EQ(s.Run({"CLUSTER", "COUNT-FAILURE-REPORTS", std::string(40, 'b')}),
            Err("ERR Unknown node " + std::string(40, 'b')));
  EXPECT_EQ(s.Run({"CLUSTER", "COUNT-FAILURE-REPORTS", std::string(kPeer)}), Int(0));
  const std::string help = s.Run({"CLUSTER", "HELP"});
  EXPECT_NE(help.find("SETSLOT slot "), std::string::npos)
      << help;
  EXPECT_EQ(s.Run({"CLUSTER", "SAVECONFIG"}), kOk);
}

// REPLICATE's checks in Redis 7.0's order, then the role in the view. The
// master has no address here, so no replication link starts in process
// (tests/e2e/test_cluster_replicas.py follows a real master).
TEST_F(ClusterCommandsTest, ReplicateMakesAnEmptyMasterAReplica) {
  server_->cluster.Update([](ClusterView& view) {
    ClusterNode peer;
    peer.id = std::string(kPeer);
    peer.port = 7001;
    peer.cport = 17001;
    peer.flags = kNodeMaster;
    const int32_t index = view.Add(peer);
    for (size_t s = 1; s < kClusterSlots; ++s) view.owner[s] = index;
    view.owner[0] = view.myself;
    view.migrating_to[0] = index;
    return true;
  });
  Session s(server_.get());
  const std::string me = MyId();
  EXPECT_EQ(s.Run({"CLUSTER", "REPLICATE", std::string(40, 'b')}),
            Err("ERR Unknown node " + std::string(40, 'b')));
  EXPECT_EQ(s.Run({"CLUSTER", "REPLICATE", me}), Err("ERR Can't replicate myself"));
  EXPECT_EQ(s.Run({"CLUSTER", "REPLICATE", std::string(kPeer)}),
            Err("ERR To set a master the node must be empty and without assigned slots."));
  EXPECT_EQ(s.Run({"CLUSTER", "DELSLOTS", "0"}), kOk);
  EXPECT_EQ(s.Run({"CLUSTER", "REPLICAS", std::string(kPeer)}), Arr(0));
  EXPECT_EQ(s.Run({"CLUSTER", "REPLICATE", std::string(kPeer)}), kOk);
  EXPECT_EQ(s.Run({"CLUSTER", "REPLICATE", std::string(kPeer)}), kOk);  // again: still OK
  const std::string my_line = me + " 127.0.0.1:7000@17000 myself,slave " + std::string(kPeer) +
                              " 0 0 0 connected\n";
  EXPECT_EQ(s.Run({"CLUSTER", "REPLICAS", std::string(kPeer)}), Arr(1) + Bulk(my_line));
  EXPECT_EQ(s.Run({"CLUSTER", "SLAVES", std::string(kPeer)}), Arr(1) + Bulk(my_line));
  EXPECT_EQ(s.Run({"CLUSTER", "REPLICAS", me}), Err("ERR The specified node is not a master"));
  EXPECT_EQ(s.Run({"CLUSTER", "SLAVES", std::string(40, 'b')}),
            Err("ERR Unknown node " + std::string(40, 'b')));
  // The open slot closed with the role; a master's id is the only target.
  const ClusterView view = server_->cluster.Snapshot();
  EXPECT_EQ(view.migrating_to[0], kNoNode);
  EXPECT_TRUE(view.me().Has(kNodeSlave));
  EXPECT_FALSE(view.me().Has(kNodeMaster));
}

// A master holding keys refuses, as one holding slots does.
TEST_F(ClusterCommandsTest, ReplicateRefusesAMasterWithKeys) {
  server_->cluster.Update([](ClusterView& view) {
    ClusterNode peer;
    peer.id = std::string(kPeer);
    peer.flags = kNodeMaster;
    view.Add(peer);
    view.owner[KeySlot("filter")] = view.myself;
    return true;
  });
  server_->cluster.SetRequireFullCoverage(false);  // one slot is enough to serve the key
  Session s(server_.get());
  EXPECT_EQ(s.Run({"BF.ADD", "filter", "a"}), Int(1));
  EXPECT_EQ(s.Run({"CLUSTER", "DELSLOTS", std::to_string(KeySlot("filter"))}), kOk);
  EXPECT_EQ(s.Run({"CLUSTER", "REPLICATE", std::string(kPeer)}),
            Err("ERR To set a master the node must be empty and without assigned slots."));
}

}  // namespace
}  // namespace bloomgate
