// Replication, with Redis's commands and numbers: a primary streams its
// journal to replicas, each replica applies it and passes the same bytes on
// to its own log and its own replicas.
//
//   primary                                      replica
//   PSYNC <replid> <offset>  <-----------------  handshake (replica_link.cc)
//   +FULLRESYNC <replid> <offset>                 -LOADING to its clients,
//   $EOF:<mark> snapshot <mark>  ------------->   keyspace replaced, offset set
//   (waits for the first REPLCONF ACK)  <------   REPLCONF ACK <offset>
//   journal records, framed  ----------------->   applied in order on one
//   or, from the backlog: +CONTINUE <replid>      thread (JournalApplier::ApplyFramed),
//                                                 the same bytes published again
//
// Offsets are Redis's: master_repl_offset counts the bytes of the stream,
// the same on every node of a chain. The journal counts its own bytes from
// 0 at each start (durability/journal.h); this room adds a delta, changed
// only in the journal's barrier (a replica's full sync sets it so that its
// offsets are its primary's).
//
// A full sync's snapshot is the snapshot cut's capture streamed to the
// replica's connection (Durability::StreamSnapshot) on a thread of its
// own; the connection's loop only sends what the feed holds
// (replica_feed.h). The backlog is a ring of repl-backlog-size bytes
// (backlog_ring.h), the journal subscriber every PSYNC is answered from.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "config/runtime_config.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "persistence/replication_mark.h"
#include "persistence/status.h"
#include "server/clients/client_pause.h"
#include "server/clients/client_registry.h"
#include "server/clients/client_state.h"
#include "server/durability/durability.h"
#include "server/durability/journal.h"
#include "server/keyspace/key_locks.h"
#include "server/keyspace/keyspace.h"
#include "server/replication/backlog_ring.h"
#include "server/replication/replica_feed.h"

namespace bloomgate {

class LinkSocket;

// What replication works on, owned by the server (ServerContext).
struct ReplicationParts {
  RuntimeConfig* config = nullptr;
  Keyspace* keyspace = nullptr;
  KeyLocks* key_locks = nullptr;
  MemoryBudget* budget = nullptr;
  Journal* journal = nullptr;
  std::unique_ptr<Durability>* durability = nullptr;  // replaced by tests before serving
  ClientRegistry* clients = nullptr;
  // CLIENT PAUSE: no PING is sent to replicas while writes are paused (a
  // failover waits for their offsets to equal the primary's).
  const ClientPause* pause = nullptr;
  std::function<FilterLimits()> filter_limits;
  std::function<uint16_t()> own_port;  // the port REPLCONF listening-port announces
};

// Applies one framed record of the primary's stream, publishing its bytes
// again (server/commands/journal_applier.h: JournalApplier::ApplyFramed).
using StreamApplier = std::function<Status(std::string_view framed)>;

class Replication : private JournalSubscriber {
 public:
  explicit Replication(const ReplicationParts& parts);
  ~Replication() override;
  Replication(const Replication&) = delete;
  Replication& operator=(const Replication&) = delete;

  // Before Start: how the link applies the stream.
  void set_applier(StreamApplier apply) { apply_ = std::move(apply); }
  // Once the data is loaded: takes up the stream position the data was
  // saved at (Durability::restored_mark: a replica continues its primary's
  // id and offset; a primary keeps the id as master_replid2, as Redis 7
  // does from its RDB's repl-id/repl-offset, so its replicas continue),
  // has every later snapshot save its position beside it, and follows
  // `replicaof` if it is set.
  void Start();
  // The first half of Stop, which blocks on nothing: the link's socket and
  // every full sync are closed, so the link leaves the client registry and
  // the server's stop does not wait its grace period for it. Called when
  // the server begins to stop, on its main loop.
  void RequestStop();
  // Graceful stop: RequestStop, then the link's and full syncs' threads joined.
  void Stop();

  // --- role (REPLICAOF / SLAVEOF) ---------------------------------------
  // Follows host:port; the link connects in the background. Nothing
  // changes when it already follows that primary.
  void Follow(const std::string& host, uint16_t port);
  // REPLICAOF NO ONE: a primary again, with a new replication id; the old
  // one is kept as master_replid2 up to this offset, so the other replicas
  // of the old primary continue with PSYNC.
  void Unfollow();
  bool is_replica() const { return replica_.load(std::memory_order_acquire); }
  // A replica's data age (Redis's, for cluster-replica-validity-factor):
  // ms since its link last heard the primary while the link is up, since
  // the link went down otherwise; 0 for a primary.
  int64_t DataAgeMs(int64_t now_ms) const;
  // A client's write is refused with -READONLY.
  bool refuses_writes() const;

  // --- the primary's side (commands, on a connection's loop) -------------
  // PSYNC: the reply to write ("+CONTINUE <replid>"), or "" when a full
  // sync's thread sends "+FULLRESYNC ..." through the link itself.
  std::string Psync(ClientState& client, std::string_view replid, int64_t offset);
  // REPLCONF ACK <offset> from a replica's link.
  void Ack(ClientState& client, uint64_t offset);
  // The stream offset a client's journal offset stands for (WAIT).
  uint64_t ReplicationOffsetOf(uint64_t journal_offset) const;
  // Replicas online whose ACK reached `offset` (WAIT).
  size_t ReplicasAcked(uint64_t offset) const;
  // min-replicas-to-write: whether enough replicas acked within
  // min-replicas-max-lag seconds.
  bool EnoughGoodReplicas(int64_t now_ms) const;

  // --- WAIT ---------------------------------------------------------------
  // WAIT numreplicas timeout for `client`: its first call fixes the offset
  // to reach (this server's offset now: past every write the client made)
  // and the deadline (timeout 0: none). True once `numreplicas` replicas
  // acked that offset or the deadline passed, with *acked their count;
  // false: the connection parks the command and runs it again at each ACK
  // (AddAckWaiter) and at WaitDeadline.
  bool WaitDone(const ClientInfo* client, uint64_t numreplicas, int64_t timeout_ms,
                int64_t now_ms, int64_t* acked);
  // The client's WAIT in progress: whether there is one, and its deadline
  // in *deadline_ms (0 = none).
  bool Waiting(const ClientInfo* client, int64_t* deadline_ms) const;
  // The WAIT was answered, or its client closed.
  void EndWait(const ClientInfo* client);
  // Called (on the ACK's thread) at every replica's ACK until removed.
  uint64_t AddAckWaiter(std::function<void()> wake);
  // Connections parked in WAIT now (INFO's blocked_clients).
  size_t waiting_clients() const;
  void RemoveAckWaiter(uint64_t id);

  // --- figures ------------------------------------------------------------
  uint64_t master_repl_offset() const;
  std::string replid() const;
  // INFO replication, without its title.
  std::string InfoFields() const;
  uint64_t sync_full() const { return sync_full_.load(std::memory_order_relaxed); }
  uint64_t sync_partial_ok() const { return sync_partial_ok_.load(std::memory_order_relaxed); }
  uint64_t sync_partial_err() const { return sync_partial_err_.load(std::memory_order_relaxed); }
  // ROLE's fields.
  struct ReplicaView {
    std::string ip;
    uint16_t port = 0;
    uint64_t offset = 0;
    bool online = false;
    int64_t last_ack_ms = 0;
  };
  std::vector<ReplicaView> Replicas() const;
  struct PrimaryView {
    std::string host;
    uint16_t port = 0;
    std::string state;  // ROLE's: connect, connecting, handshake, sync, connected
  };
  PrimaryView Primary() const;

  // CONFIG SET repl-backlog-size.
  void ApplyConfig(const ServerConfig& config);

 private:
  enum class LinkState : uint8_t { kNone, kConnect, kConnecting, kHandshake, kSync, kConnected };

  // --- JournalSubscriber: the backlog (under the publish lock) ------------
  bool accepting() const override { return backlog_active_.load(std::memory_order_acquire); }
  void OnRecord(const JournalRecord& record) override;
  // Starts keeping the backlog, from the next record.
  void ActivateBacklog();
  // The position a snapshot cut at journal offset `next_offset` stands for
  // (Durability's mark source, in the cut's barrier); empty while the data
  // is not the stream's (a full sync loading, a replica that diverged).
  std::optional<ReplicationMark> MarkAt(uint64_t next_offset);
  void Restore(const Durability::RestoredMark& restored);

  // A full sync's thread: the snapshot to `feed`, then its stream.
  void RunFullSync(std::shared_ptr<ReplicaFeed> feed);
  // Closes every replica's link (their history changed: a full sync here).
  void DisconnectReplicas();
  void StartLink();
  void RetireLinkLocked();
  // The primary's PING to its replicas every repl-ping-replica-period
  // seconds: a record of the stream (Redis's replicationCron feeds the same
  // PING), so a replica hears from its primary within repl-timeout without
  // writes, and its offset still equals its primary's.
  void PingLoop();
  void PingReplicas();

  // --- the replica's side (replica_link.cc) -------------------------------
  void LinkLoop(uint64_t generation, std::string host, uint16_t port);
  Status RunLink(uint64_t generation, const std::string& host, uint16_t port);
  Status Handshake(LinkSocket& socket, std::string* reply);
  Status LoadFullSync(LinkSocket& socket, const std::string& replid, uint64_t offset);
  Status Stream(uint64_t generation, LinkSocket& socket);
  bool LinkCurrent(uint64_t generation) const;

  const ReplicationParts parts_;
  StreamApplier apply_;

  // The delta from journal offsets to stream offsets: written only in the
  // journal's barrier, so OnRecord (under the publish lock) reads it stable.
  std::atomic<uint64_t> delta_{0};
  std::atomic<bool> backlog_active_{false};
  BacklogRing ring_;  // guarded by the journal's publish lock (AtBarrier, OnRecord)

  mutable std::mutex mutex_;  // guards what follows; never held into the journal's barrier
  std::string replid_;
  std::string replid2_;
  int64_t second_offset_ = -1;
  std::vector<std::shared_ptr<ReplicaFeed>> feeds_;  // live until Stop (journal subscribers)
  std::vector<std::thread> threads_;                 // full syncs and retired links
  std::string master_host_;
  uint16_t master_port_ = 0;
  std::shared_ptr<LinkSocket> link_socket_;
  std::thread link_thread_;
  std::condition_variable link_wake_;  // REPLICAOF or Stop, to a link waiting to retry
  std::thread pinger_;                 // PingLoop, from Start to Stop
  bool stopping_ = false;

  // One record applied at a time; Unfollow takes it to know none is.
  std::mutex apply_mutex_;
  std::atomic<bool> replica_{false};
  std::atomic<uint64_t> link_generation_{0};
  std::atomic<LinkState> link_state_{LinkState::kNone};
  std::atomic<int64_t> link_down_since_ms_{0};
  std::atomic<int64_t> last_io_ms_{0};
  // The journal's unapplied count after the last full sync: more since
  // means this replica diverged and asks for a full sync.
  std::atomic<uint64_t> unapplied_at_sync_{0};
  // The replica holds its primary's data (a full sync completed, or the
  // data was restored with its stream position): it may try PSYNC when it
  // reconnects.
  std::atomic<bool> synced_{false};
  // From the moment a full sync starts replacing the keyspace until the
  // primary's data and offset are in place: no snapshot stands for a
  // stream position (MarkAt).
  std::atomic<bool> full_sync_loading_{false};

  // The settings every write reads, kept apart from the config's copy.
  std::atomic<bool> read_only_{true};
  std::atomic<uint32_t> min_replicas_{0};
  std::atomic<uint32_t> min_replicas_max_lag_s_{10};
  std::atomic<uint32_t> repl_timeout_s_{60};

  // WAIT: each waiting client's target offset and deadline, and the
  // connections to wake at an ACK.
  struct Wait {
    uint64_t offset = 0;
    int64_t deadline_ms = 0;
  };
  mutable std::mutex wait_mutex_;
  std::map<const ClientInfo*, Wait> waits_;                    // guarded by wait_mutex_
  std::map<uint64_t, std::function<void()>> ack_waiters_;      // guarded by wait_mutex_
  uint64_t next_ack_waiter_ = 1;                               // guarded by wait_mutex_

  std::atomic<uint64_t> sync_full_{0};
  std::atomic<uint64_t> sync_partial_ok_{0};
  std::atomic<uint64_t> sync_partial_err_{0};
};

}  // namespace bloomgate
