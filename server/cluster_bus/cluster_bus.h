// The cluster bus: this node's links to the other nodes of its Redis
// Cluster, on its own thread and io_context. It listens on cluster-port,
// keeps a link to every known node, and every 100 ms (Redis's clusterCron)
// pings a few nodes and every node not heard from for half the node
// timeout; each PING/PONG/MEET carries this node's header and gossip about
// a few others, and what arrives is applied to the cluster room's view
// (bus_receiver.h), which saves cluster-config-file when it changes.
//
// A replica whose master is flagged fail runs Redis's election from the
// cron (replica_election.h): AUTH_REQUEST to every node, the masters'
// AUTH_ACKs counted, and on winning it takes its master's slots, stops
// following it (ClusterBusOptions::promote) and PONGs every node.
//
// Nodes join only through MEET (CLUSTER MEET, or a node a known peer
// gossiped about): a PING from a node that was not met is dropped and its
// link closed, as Redis does.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "server/cluster/cluster_state.h"
#include "server/cluster_bus/bus_asio.h"
#include "server/cluster_bus/bus_link.h"
#include "server/cluster_bus/bus_receiver.h"
#include "server/cluster_bus/replica_election.h"
#include "server/cluster_bus/manual_failover.h"
#include "server/cluster_bus/replica_migration.h"

namespace bloomgate {

// Redis's cluster cron period.
inline constexpr int64_t kBusCronMs = 100;
// A forgotten node is not met again through gossip for this long
// (CLUSTER FORGET's ban list, Redis's CLUSTER_BLACKLIST_TTL).
inline constexpr int64_t kBusForgetBanMs = 60'000;

struct ClusterBusOptions {
  std::vector<std::string> bind;  // addresses the bus listens on
  uint16_t cport = 0;
  int64_t node_timeout_ms = 15'000;
  std::string announce_ip;  // cluster-announce-ip; "" = what peers see
  // This node's replication offset, sent in every message (null: 0).
  std::function<uint64_t()> repl_offset;
  // Makes this node replicate host:port (the replication room's Follow);
  // false when it cannot yet (the server still starting): the cron asks
  // again. Called from the cron whenever myself is a replica whose master's
  // address is known and is not the one last followed, as Redis's
  // clusterCron calls replicationSetMaster (after a restart from
  // nodes.conf, or when the master's address changes). Null: never.
  std::function<bool(const std::string& host, uint16_t port)> follow_master;
  // Makes this node a primary that follows no one (the replication room's
  // Unfollow: REPLICAOF NO ONE's path, so the old master's other replicas
  // continue with PSYNC). Called on the bus's thread once this node won an
  // election, before the view names it master. Null: never.
  std::function<void()> promote;
  // What a replica's election reads each cron tick (config and the
  // replication link's age). Null: Redis's defaults and a data age of 0.
  std::function<ElectionSettings()> election_settings;
  // A master's side of CLUSTER FAILOVER: client writes wait until end_ms
  // (unix ms), then unpaused when the failover ends (CLIENT PAUSE WRITE's
  // machinery, as a pause of its own: CLIENT UNPAUSE leaves it, and its end
  // leaves a client's). Null: never paused.
  std::function<void(int64_t end_ms)> pause_writes;
  std::function<void()> unpause_writes;
};

// One row of CLUSTER LINKS (Redis 7.0's fields).
struct BusLinkInfo {
  std::string direction;  // "to" or "from"
  std::string node_id;
  int64_t create_time_ms = 0;
  std::string events;  // "r", "w" or "rw"
  uint64_t send_buffer_allocated = 0;
  uint64_t send_buffer_used = 0;
};

enum class MeetOutcome { kOk, kBadAddress, kTooManyNodes };
enum class ForgetOutcome { kOk, kUnknownNode, kMyself, kMyMaster };

class ClusterBus {
 public:
  ClusterBus(ClusterState* state, ClusterBusOptions options);
  ~ClusterBus();
  ClusterBus(const ClusterBus&) = delete;
  ClusterBus& operator=(const ClusterBus&) = delete;

  // Binds the bus port on every address and starts the bus's thread; false
  // with *error (nothing left open) when a bind fails. cport 0 binds a free
  // port (the same on every address) and sets myself's cport to it.
  bool Start(std::string* error);
  void Stop();
  uint16_t bound_port() const { return options_.cport; }

  // CLUSTER MEET: starts a handshake toward ip:port (bus port cport).
  // kBadAddress when the address is not an IP address or a port is out of
  // range (Redis's "Invalid node address specified"), kTooManyNodes when
  // the view holds kMaxClusterNodes already (counted as refused); a
  // handshake already under way toward that address is not started twice.
  MeetOutcome Meet(std::string_view ip, uint16_t port, uint16_t cport);
  // CLUSTER FORGET: removes the node and keeps it out for kBusForgetBanMs.
  ForgetOutcome Forget(std::string_view id);
  // CLUSTER LINKS: the links as they are on the bus's loop now.
  std::vector<BusLinkInfo> Links();

  // Whether `id` was forgotten less than kBusForgetBanMs ago.
  bool Banned(std::string_view id);

  // A manual failover's election (CLUSTER FAILOVER, once this replica's
  // offset has reached its paused master's; or at once for FORCE). Within
  // a cron tick (100 ms) the bus bumps currentEpoch and sends AUTH_REQUEST
  // with FORCEACK to every node, without the conditions of an automatic
  // election (master flagged fail, cluster-replica-no-failover, the data's
  // age, the rank's delay); the masters' votes are counted as for an
  // automatic one for max(2 x node timeout, 2 s). Won: this node takes its
  // master's slots at the election's epoch, calls options' promote and
  // PONGs every node (CLUSTER NODES then shows it master). Not won by
  // `deadline_ms` (unix ms, the manual failover's own timeout): the
  // election stops counting as manual and, with the master up, ends.
  // False, nothing started, when myself is not a replica of a known
  // master serving slots or the bus is not running. Any thread.
  bool StartManualElection(int64_t deadline_ms);
  // CLUSTER FAILOVER [FORCE] on a replica whose master is known (the
  // command checked it): the handshake with the master (default) or the
  // election at once (FORCE) runs on the bus's loop, given up after
  // kManualFailoverTimeoutMs.
  void StartManualFailover(bool force);
  // Ends a manual failover in progress (TAKEOVER replaced the master).
  void ResetManualFailover();

 private:
  void Cron();
  void ScheduleCron();
  void DoAccept(bus::tcp::acceptor& acceptor);
  BusLink::Callbacks MakeCallbacks();
  void OnMessage(const std::shared_ptr<BusLink>& link, const BusMessage& message);
  void OnConnected(const std::shared_ptr<BusLink>& link);
  void OnClosed(const std::shared_ptr<BusLink>& link);
  // Builds and sends this node's PING/PONG/MEET on `link`; PING and MEET
  // mark the node's ping as pending.
  // `fail_about` (a PONG's): Redis's FAIL message about that node.
  void SendHeartbeat(const std::shared_ptr<BusLink>& link, BusMessageType type,
                     const std::string& fail_about = "");
  void SendUpdate(const std::shared_ptr<BusLink>& link, const std::string& about_id);
  void Send(const std::shared_ptr<BusLink>& link, const BusMessage& message);
  // `unreachable`: an outbound link closed before it ever connected.
  void SetLinkConnected(const std::string& node_id, bool connected, bool unreachable = false);
  // A digest of myself's claim (config epoch, role, master, owned slots); a change
  // makes the next cron PONG every peer.
  uint64_t MyClaimDigest();
  // A replica's link to its master's address (follow_master).
  void FollowMyMaster();
  // Redis's clusterHandleSlaveFailover: one step of the election (cron,
  // an AUTH_ACK, a manual start).
  void HandleElection();
  void RequestVotes();
  void PromoteMyself();
  // An AUTH_REQUEST: vote if Redis's rules allow, saved before the ACK.
  void OnVoteRequest(const std::shared_ptr<BusLink>& link, const BusMessage& request);
  void OnVote(const BusMessage& ack);
  // PONG to every connected node; `only` non-empty: to those ids only.
  void BroadcastPong(const std::set<std::string>* only = nullptr);
  // cluster-replica-no-failover, as myself's nofailover flag.
  void SyncNoFailoverFlag(bool no_failover);
  // The manual failover's cron step (manual_failover.h).
  void ManualFailoverCron(int64_t now_ms);
  // A replica's move to an orphaned master (replica_migration.h).
  void ReplicaMigrationCron(int64_t now_ms);
  void UnpauseWrites();
  // MFSTART from `sender_id`: pause writes if it is a replica of myself.
  void OnMfStart(const std::string& sender_id);
  // A message flagged PAUSED: its offset, if it is from myself's master.
  void OnPausedMaster(const BusMessage& message);

  ClusterState* state_;
  ClusterBusOptions options_;
  bus::asio::io_context loop_;
  std::vector<std::unique_ptr<bus::tcp::acceptor>> acceptors_;
  bus::asio::steady_timer cron_timer_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::mt19937_64 random_;

  // The bus thread's own: links by direction.
  std::map<std::string, std::shared_ptr<BusLink>> to_links_;  // by node id
  std::set<std::shared_ptr<BusLink>> from_links_;
  std::map<std::string, int64_t> handshake_started_ms_;
  uint64_t cron_ticks_ = 0;
  uint64_t last_claim_digest_ = 0;
  bool broadcast_due_ = false;
  std::string followed_;  // "host:port" last given to follow_master
  ReplicaElection election_;
  ElectionWait logged_wait_ = ElectionWait::kNone;
  ManualFailover manual_failover_;
  ReplicaMigrationMemory migration_memory_;

  std::mutex ban_mu_;
  std::map<std::string, int64_t, std::less<>> banned_until_ms_;
};

// Installs the running bus (nullptr: none): main.cc at start-up; Stop()
// takes it out again. CLUSTER MEET/FORGET/LINKS reach it here.
void SetClusterBus(ClusterBus* bus);
// The running bus, or null (the cluster is off, or a server in a test runs
// without one).
ClusterBus* CurrentClusterBus();

}  // namespace bloomgate
