// One replica's link, on the primary: a journal subscriber that queues the
// stream for it, and the outbox its client connection sends from
// (server/clients/link_outbox.h).
//
// A full sync: the sync thread pushes the +FULLRESYNC line, the EOF
// preamble, the snapshot and the mark (PushSnapshot blocks while
// kSnapshotWindow bytes wait, so the snapshot is never held whole); the
// feed joined the stream at the cut, and the records published meanwhile
// wait in it (at most kStreamLimit bytes, Redis's replica hard limit)
// until the replica's first REPLCONF ACK says it loaded the snapshot. A
// partial resync starts streaming at once, the backlog's bytes first.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "persistence/status.h"
#include "server/clients/client_registry.h"
#include "server/clients/link_outbox.h"
#include "server/durability/journal.h"

namespace bloomgate {

class ReplicaFeed : public JournalSubscriber, public LinkOutbox {
 public:
  // Snapshot bytes queued before PushSnapshot waits for the socket.
  static constexpr size_t kSnapshotWindow = size_t{4} << 20;
  // Stream bytes queued before the link is cut: Redis's
  // client-output-buffer-limit for replicas, 256 MB hard.
  static constexpr size_t kStreamLimit = size_t{256} << 20;

  // `wake` posts a drain to the connection's loop; `info` is the
  // connection's (CLIENT KILL, INFO's slaveN).
  ReplicaFeed(Journal* journal, std::function<void()> wake, std::shared_ptr<ClientInfo> info,
              std::string ip, uint16_t port);

  // --- JournalSubscriber (under the publish lock) --------------------------
  bool accepting() const override { return joined_.load(std::memory_order_acquire); }
  void OnRecord(const JournalRecord& record) override;
  // Called in the barrier where the feed joins the stream.
  void Joined() { joined_.store(true, std::memory_order_release); }

  // --- the sync thread ------------------------------------------------------
  // Queues snapshot-phase bytes (the +FULLRESYNC line, the preamble, the
  // snapshot, the mark), waiting while kSnapshotWindow are unsent. An
  // error once the connection closed.
  Status PushSnapshot(std::string_view bytes);
  // The snapshot and its mark are queued: stream once the replica ACKs.
  void SnapshotDone();
  // A partial resync: queue the backlog's bytes and stream at once (in the
  // barrier where the feed joins).
  void ContinueWith(std::string backlog_bytes);

  // --- the connection's loop -----------------------------------------------
  std::string Take(size_t max, bool* overflowed) override;
  void Closed() override;
  // REPLCONF ACK <offset>: what the replica has applied, now.
  void Ack(uint64_t offset, int64_t now_ms);
  // A partial resync was accepted: the replica counts as heard from now
  // (Redis sets repl_ack_time there), so its silence is timed from here.
  void MarkHeard(int64_t now_ms) { last_ack_ms_.store(now_ms, std::memory_order_relaxed); }

  bool closed() const { return closed_.load(std::memory_order_acquire); }
  // online: the snapshot is loaded and the stream flows (INFO state=online).
  bool online() const { return streaming_.load(std::memory_order_acquire); }
  uint64_t acked_offset() const { return acked_offset_.load(std::memory_order_acquire); }
  int64_t last_ack_ms() const { return last_ack_ms_.load(std::memory_order_relaxed); }
  const std::string& ip() const { return ip_; }
  uint16_t port() const { return port_; }
  const std::shared_ptr<ClientInfo>& info() const { return info_; }

 private:
  // Under mutex_: posts one drain unless one is pending.
  void WakeLocked();

  Journal* const journal_;
  const std::function<void()> wake_;
  const std::shared_ptr<ClientInfo> info_;
  const std::string ip_;
  const uint16_t port_;

  std::mutex mutex_;
  std::condition_variable drained_;  // snapshot_ shrank, or closed
  std::string snapshot_;             // snapshot-phase bytes not yet taken
  std::string stream_;               // stream bytes, from stream_begin_ not yet taken
  size_t stream_begin_ = 0;
  bool snapshot_done_ = false;
  bool wake_pending_ = false;
  bool overflowed_ = false;
  std::atomic<bool> joined_{false};
  std::atomic<bool> streaming_{false};
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> acked_offset_{0};
  std::atomic<int64_t> last_ack_ms_{0};
};

}  // namespace bloomgate
