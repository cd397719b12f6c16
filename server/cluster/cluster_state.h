// The cluster room's model: this node's view of a Redis Cluster (the nodes
// it knows, who owns each of the 16,384 hash slots, the slots being moved,
// the epochs), shared by the CLUSTER commands, the routing gate in dispatch
// and the cluster bus.
//
// One ClusterView is guarded by one reader/writer lock: commands on every
// loop thread and routing read it shared (routing allocates nothing under
// it); the CLUSTER commands and the bus's thread change it through Update,
// which also writes the change to cluster-config-file (ClusterState::Attach)
// before it returns, as Redis saves nodes.conf before it replies.
//
// Node references inside a view are indices into ClusterView::nodes
// (kNoNode = none); they stay valid while the lock is held. Outside the
// lock, use node ids (40 hex characters), which never change.
#pragma once

#include <pthread.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/key_slot.h"

namespace bloomgate {

// A node's flags, in the order CLUSTER NODES lists them (Redis 7.0's
// redisNodeFlagsTable).
enum ClusterNodeFlag : uint32_t {
  kNodeMyself = 1u << 0,
  kNodeMaster = 1u << 1,
  kNodeSlave = 1u << 2,
  kNodePFail = 1u << 3,      // "fail?": this node's own suspicion
  kNodeFail = 1u << 4,       // agreed by a majority of masters
  kNodeHandshake = 1u << 5,  // met, not yet answered: a provisional id
  kNodeNoAddr = 1u << 6,     // address unknown
  kNodeNoFailover = 1u << 7,
};

// A node id: 40 lowercase hex characters (160 random bits, as Redis).
inline constexpr size_t kNodeIdLength = 40;
// Redis's default gap between a node's port and its bus port.
inline constexpr uint32_t kClusterPortOffset = 10000;
// The most nodes a view holds (myself and handshakes included). Redis has no
// cap and advises at most 1,000 nodes; without one a peer could gossip
// fake nodes until memory runs out (each costs ~200 bytes here and a link).
// 4,096 is four times Redis's advice; MEET and gossip beyond it are refused
// and counted (CLUSTER INFO cluster_nodes_refused).
inline constexpr size_t kMaxClusterNodes = 4096;

struct ClusterNode {
  std::string id;
  std::string ip;         // empty until known (a fresh Redis node shows ":port@cport")
  uint16_t port = 0;      // clients' port
  uint16_t cport = 0;     // cluster bus port
  uint32_t flags = 0;     // ClusterNodeFlag bits
  std::string master_id;  // a replica's master; empty for a master
  uint64_t config_epoch = 0;
  int64_t ping_sent_ms = 0;      // unix ms of the ping awaiting a pong; 0 = none
  int64_t pong_received_ms = 0;  // unix ms of the last pong; 0 = never
  bool link_connected = false;   // a bus link to it is up (myself: always shown connected)
  // Its replication offset as last gossiped (CLUSTER SHARDS); myself's is
  // read from the replication room instead.
  int64_t repl_offset = 0;
  // Unix ms when this node was flagged fail (Redis's fail_time): a master
  // that serves slots is cleared only 2 x cluster-node-timeout after it.
  int64_t fail_time_ms = 0;
  // Failure reports of other masters about this node: (reporter id, unix ms
  // of the report), one per reporter. The bus adds, refreshes and withdraws
  // them from the reporters' gossip; only those younger than twice
  // cluster-node-timeout count (COUNT-FAILURE-REPORTS, the fail majority).
  std::vector<std::pair<std::string, int64_t>> failure_reports;
  // Unix ms when this node (a master) last voted for a replica of this
  // master in an election (Redis's voted_time): no other replica of it gets
  // this node's vote for 2 x cluster-node-timeout. Not saved, as in Redis.
  int64_t voted_time_ms = 0;

  bool Has(uint32_t flag) const { return (flags & flag) != 0; }
};

inline constexpr int32_t kNoNode = -1;

// Redis 7.0's delays before a master's state goes (back) to ok
// (clusterUpdateState): a master just started keeps the state fail for
// 2 s, time to hear from the others' gossip that its replica replaced it
// while it was down, before it takes writes that would be lost; a master
// that was in the minority waits the node timeout, clamped to
// [0.5 s, 5 s], after it reaches the majority again, time to hear of a
// promotion made meanwhile.
inline constexpr int64_t kClusterWritableDelayMs = 2000;
inline constexpr int64_t kClusterMinRejoinDelayMs = 500;
inline constexpr int64_t kClusterMaxRejoinDelayMs = 5000;
int64_t ClusterRejoinDelayMs(int64_t node_timeout_ms);

// The clock RefreshHealth applies those delays with: now, when the state
// was first computed with them (Redis's first_call_time), and the rejoin
// delay (ClusterRejoinDelayMs).
struct HealthClock {
  int64_t now_ms = 0;
  int64_t started_ms = 0;
  int64_t rejoin_delay_ms = 0;
};

// The whole view. Copyable: commands that render it take a copy (about
// 200 KB, three slot tables) and format without the lock.
struct ClusterView {
  std::vector<ClusterNode> nodes;
  int32_t myself = kNoNode;
  // Per slot: the owner, and the open migration (this node's only, as in
  // Redis: the node it is importing the slot from / migrating it to).
  std::array<int32_t, kClusterSlots> owner;
  std::array<int32_t, kClusterSlots> importing_from;
  std::array<int32_t, kClusterSlots> migrating_to;
  uint64_t current_epoch = 0;
  uint64_t last_vote_epoch = 0;
  // Derived from the above after every change (RefreshHealth, as Redis's
  // clusterUpdateState): whether keys are served at all, and cluster_size,
  // the masters serving at least one slot.
  bool state_ok = false;
  int32_t size = 0;
  // Unix ms when the reachable masters were last found fewer than a
  // majority (Redis's among_minority_time); 0 = never.
  int64_t among_minority_ms = 0;

  ClusterView() {
    owner.fill(kNoNode);
    importing_from.fill(kNoNode);
    migrating_to.fill(kNoNode);
  }

  // Index of the node with this id, or kNoNode.
  int32_t Find(std::string_view id) const;
  const ClusterNode& me() const { return nodes[static_cast<size_t>(myself)]; }
  ClusterNode& me() { return nodes[static_cast<size_t>(myself)]; }
  // Adds a node (its id must be new) and returns its index.
  int32_t Add(ClusterNode node);
  // Removes a node that is not myself: its slots become unowned, migrations
  // toward it close, its replicas lose their master reference. Indices above
  // it shift down by one (every slot table is rewritten).
  void Remove(int32_t index);
  // Slots owned by `index`, and whether any is.
  size_t SlotCount(int32_t index) const;
  // The node's epoch as CLUSTER NODES and INFO show it: a replica shows its
  // master's.
  uint64_t EpochOf(int32_t index) const;
  // A master's index for a replica (kNoNode if unknown or a master).
  int32_t MasterOf(int32_t index) const;
  // Highest config epoch of any node (Redis's clusterGetMaxEpoch, with
  // currentEpoch when that is larger).
  uint64_t MaxEpoch() const;
  // Recomputes state_ok and size. Redis 7.0's rule: the state is fail when
  // `require_full_coverage` and a slot has no owner or a failed one, or
  // when fewer than size / 2 + 1 slot-serving masters are reachable (not
  // flagged fail or fail?). With a clock, a master does not go from fail to
  // ok before kClusterWritableDelayMs after clock->started_ms, nor before
  // clock->rejoin_delay_ms after among_minority_ms; without one (no bus
  // runs: tests, the start-up load) the state follows the rule at once.
  void RefreshHealth(bool require_full_coverage, const HealthClock* clock = nullptr);
  // Redis's clusterBumpConfigEpochWithoutConsensus: unless myself already
  // holds the highest epoch (and it is not 0), currentEpoch + 1 becomes
  // myself's config epoch. Whether it moved (CLUSTER BUMPEPOCH's BUMPED).
  bool BumpEpochWithoutConsensus();
};

// A fresh node id from the kernel's random source (getrandom(2)).
std::string RandomNodeId();
// Whether `id` is 40 lowercase or uppercase hex characters.
bool IsValidNodeId(std::string_view id);

// A new view holding only myself: a master with a fresh id, no slots, epoch 0.
ClusterView FreshView(uint16_t port, uint16_t cport, std::string_view announce_ip);

// CLUSTER NODES: one line per node ("\n"-terminated), Redis 7.0's format
// (clusterGenNodeDescription):
//   <id> <ip>:<port>@<cport> <flags> <master-id|-> <ping-sent> <pong-recv>
//   <config-epoch> <connected|disconnected>[ <slot>|<start>-<end>]...
//   and for myself the open slots, [<slot>->-<id>] (migrating) then
//   [<slot>-<-<id>] (importing).
// Nodes flagged `skip_flags` are left out (the config file leaves out
// handshake nodes).
std::string RenderNodeLine(const ClusterView& view, int32_t index);
std::string RenderClusterNodes(const ClusterView& view, uint32_t skip_flags = 0);
// "myself,master", "slave", ... or "noflags".
std::string RenderNodeFlags(uint32_t flags);

// The message types the bus counts, named as CLUSTER INFO names them
// (cluster_stats_messages_<name>_sent / _received).
enum class ClusterMessageType : uint8_t {
  kPing, kPong, kMeet, kFail, kPublish, kPublishShard, kAuthReq, kAuthAck, kUpdate,
  kMfStart, kModule, kCount
};
std::string_view ClusterMessageTypeName(ClusterMessageType type);

// The bus's counters for CLUSTER INFO; relaxed atomics, bumped on any thread.
struct ClusterMessageCounters {
  std::array<std::atomic<uint64_t>, static_cast<size_t>(ClusterMessageType::kCount)> sent{};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(ClusterMessageType::kCount)> received{};
  std::atomic<uint64_t> links_buffer_limit_exceeded{0};
  // Nodes a MEET, gossip or CLUSTER MEET would have added past kMaxClusterNodes.
  std::atomic<uint64_t> nodes_refused{0};

  void CountSent(ClusterMessageType type) {
    sent[static_cast<size_t>(type)].fetch_add(1, std::memory_order_relaxed);
  }
  void CountReceived(ClusterMessageType type) {
    received[static_cast<size_t>(type)].fetch_add(1, std::memory_order_relaxed);
  }
};

// A reader/writer lock that lets a waiting writer in before new readers
// (glibc's std::shared_mutex prefers readers: with every loop thread
// routing commands under the shared side, the bus's updates could wait
// indefinitely). Readers must not take it twice on one thread.
class ClusterViewLock {
 public:
  ClusterViewLock();
  ~ClusterViewLock();
  ClusterViewLock(const ClusterViewLock&) = delete;
  ClusterViewLock& operator=(const ClusterViewLock&) = delete;
  void lock();
  void unlock();
  void lock_shared();
  void unlock_shared();

 private:
  pthread_rwlock_t lock_;
};

class ClusterState {
 public:
  // Persists a changed view (cluster-config-file): receives the view's
  // config text and whether it must be fsynced, returns an empty string or
  // the failure's text.
  //
  // Durable (fsynced) when an epoch moved since the last durable save
  // (currentEpoch, myself's config epoch, lastVoteEpoch) and for CLUSTER
  // SAVECONFIG, as Redis fsyncs nodes.conf: a node must never vote twice
  // in one epoch or take back an older epoch after a reboot. Every other
  // change (slots, importing/migrating marks, peers' addresses and flags)
  // is written without fsync, as Redis writes it: it survives a crash of
  // the process, and after a crash of the machine the peers' gossip,
  // ordered by epochs, restores it. A reshard sets 4 slot marks per slot
  // on two nodes: fsynced, each cost 10-35 ms on ext4 against 0.2-0.4 ms.
  using Saver = std::function<std::string(const std::string& config_text, bool durable)>;

  ClusterState() = default;
  ClusterState(const ClusterState&) = delete;
  ClusterState& operator=(const ClusterState&) = delete;

  // Whether cluster-enabled was on at start-up (fixed for the process).
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // cluster-require-full-coverage (CONFIG SET): recomputes the state.
  void SetRequireFullCoverage(bool require);

  // cluster-allow-reads-when-down (CONFIG SET): whether the routing gate
  // serves read-only commands while the state is fail.
  void SetAllowReadsWhenDown(bool allow) {
    allow_reads_when_down_.store(allow, std::memory_order_relaxed);
  }
  bool allow_reads_when_down() const {
    return allow_reads_when_down_.load(std::memory_order_relaxed);
  }
  // cluster-migration-barrier and cluster-allow-replica-migration (CONFIG
  // SET), read by the bus's cron and receiver.
  void SetReplicaMigration(uint32_t barrier, bool allow) {
    migration_barrier_.store(barrier, std::memory_order_relaxed);
    allow_replica_migration_.store(allow, std::memory_order_relaxed);
  }
  uint32_t migration_barrier() const { return migration_barrier_.load(std::memory_order_relaxed); }
  bool allow_replica_migration() const {
    return allow_replica_migration_.load(std::memory_order_relaxed);
  }

  // At start-up, before serving: turns the cluster on with `view` (loaded
  // or fresh) and where changes are saved (null: nowhere, as in tests).
  void Enable(ClusterView view, Saver saver);

  // A copy of the whole view, taken under the shared lock.
  ClusterView Snapshot() const;

  // Runs fn(const ClusterView&) under the shared lock and returns its
  // result: the routing gate's and the bus's reads. fn must not call back
  // into this object.
  template <typename Fn>
  auto Read(Fn&& fn) const {
    std::shared_lock lock(mu_);
    return fn(static_cast<const ClusterView&>(view_));
  }

  // Runs fn(ClusterView&) under the exclusive lock. When fn returns true
  // (it changed the view) the derived fields are recomputed
  // (RefreshHealth), the view's version moves on and, once the exclusive
  // lock is released, the view is rendered under the shared one (readers
  // and routing go on meanwhile) and saved with no lock held (if a saver is
  // set) before Update returns; the save's failure text is returned (empty:
  // saved, or nothing to save). fn must not call back into this object.
  std::string Update(const std::function<bool(ClusterView&)>& fn);

  // The bus, at its start: from now on the state goes to ok only after
  // Redis's delays (HealthClock), starting from fail as Redis's does.
  void StartHealthDelays(int64_t now_ms, int64_t rejoin_delay_ms);
  // The bus's cron: while the state is fail, recomputes it at `now_ms`, so
  // it turns ok once a delay is over (Redis's clusterCron does the same).
  void RefreshHealthAt(int64_t now_ms);

  // Saves the current view now (CLUSTER SAVECONFIG); the failure's text or
  // empty.
  std::string Save();

  // Bumped by every change through Update: lets readers tell cheaply
  // whether their copy is stale.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }

  // The node id of this node ("" while the cluster is off).
  std::string my_id() const;

  ClusterMessageCounters& counters() { return counters_; }
  const ClusterMessageCounters& counters() const { return counters_; }

 private:
  // The epochs a save carries: a change of any of them is saved durably.
  struct Epochs {
    uint64_t current = 0;
    uint64_t mine = 0;
    uint64_t last_vote = 0;
    bool operator==(const Epochs&) const = default;
  };
  static Epochs EpochsOf(const ClusterView& view);
  // health_clock_ set to `now_ms`, or null before StartHealthDelays; under
  // the exclusive hold of mu_.
  const HealthClock* HealthClockAt(int64_t now_ms);
  // Renders the view as it is now under the shared lock and saves it,
  // fsynced if `force_durable` or an epoch moved.
  std::string SaveCurrent(bool force_durable);
  std::string SaveText(std::string text, uint64_t version, Epochs epochs, bool force_durable);

  mutable ClusterViewLock mu_;
  ClusterView view_;
  std::atomic<bool> enabled_{false};
  bool require_full_coverage_ = true;  // under mu_
  std::optional<HealthClock> health_clock_;  // under mu_; set by StartHealthDelays
  std::atomic<bool> allow_reads_when_down_{false};
  std::atomic<uint32_t> migration_barrier_{1};
  std::atomic<bool> allow_replica_migration_{true};
  std::atomic<uint64_t> version_{0};
  Saver saver_;
  // Serialises saves; a save of an older version than the last one written
  // is skipped, so the file only moves forward.
  std::mutex save_mu_;
  uint64_t saved_version_ = 0;
  std::optional<Epochs> durable_epochs_;  // under save_mu_: the last fsynced save's
  ClusterMessageCounters counters_;
};

}  // namespace bloomgate
