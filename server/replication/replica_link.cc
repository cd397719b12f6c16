// The replica's side of replication: the link to the primary, on a thread
// of its own (Replication::Follow starts it, REPLICAOF and Stop retire it
// by bumping the link generation and shutting its socket down).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "filters/admission.h"
#include "persistence/snapshot_file.h"
#include "server/base/clock.h"
#include "server/replication/eof_framing.h"
#include "server/replication/link_socket.h"
#include "server/replication/replication.h"
#include "server/replication/stream_file_system.h"

namespace bloomgate {
namespace {

// A record's frame (persistence/append_log.cc): marker u16, body_length u32
// little-endian, body_xxh3 u64, frame_check u32.
constexpr size_t kFrameBytes = 18;
// How often the replica reports its offset (Redis: every second).
constexpr int kAckIntervalMs = 1000;
// Between two attempts to reach the primary (Redis retries every second).
constexpr auto kRetryDelay = std::chrono::seconds(1);

uint32_t FrameBodyLength(std::string_view frame) {
  uint32_t length = 0;
  for (int i = 3; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(frame[2 + i]);
  return length;
}

// A reply line that is not an error; PING may be refused for want of AUTH
// (Redis accepts -NOAUTH and -NOPERM there and goes on to AUTH).
Status ExpectReply(LinkSocket& socket, std::string_view step, bool allow_auth_errors,
                   std::string* line) {
  do {
    Status status = socket.ReadLine(line);
    if (!status.ok()) return status.WithContext(std::string(step) + ": ");
  } while (line->empty());  // the primary's keep-alive newlines
  if ((*line)[0] == '-') {
    if (allow_auth_errors &&
        (line->rfind("-NOAUTH", 0) == 0 || line->rfind("-NOPERM", 0) == 0)) {
      return Status::Ok();
    }
    return Status::Error(std::string(step) + ": the primary answered " + *line);
  }
  return Status::Ok();
}

}  // namespace

bool Replication::LinkCurrent(uint64_t generation) const {
  return link_generation_.load(std::memory_order_acquire) == generation;
}

void Replication::LinkLoop(uint64_t generation, std::string host, uint16_t port) {
  while (LinkCurrent(generation)) {
    Status status = RunLink(generation, host, port);
    if (!LinkCurrent(generation)) break;
    if (link_state_.load(std::memory_order_acquire) != LinkState::kConnect) {
      link_down_since_ms_.store(NowMs(), std::memory_order_relaxed);
    }
    link_state_.store(LinkState::kConnect, std::memory_order_release);
    spdlog::warn("replication link to {}:{}: {}; retrying in 1 s", host, port, status.message());
    std::unique_lock lock(mutex_);
    link_wake_.wait_for(lock, kRetryDelay, [&] { return !LinkCurrent(generation) || stopping_; });
  }
}

Status Replication::RunLink(uint64_t generation, const std::string& host, uint16_t port) {
  const ServerConfig config = parts_.config->Get();
  const int timeout_ms = static_cast<int>(std::min<uint64_t>(config.repl_timeout * 1000ull, INT32_MAX));
  auto socket = std::make_shared<LinkSocket>();
  {
    std::lock_guard lock(mutex_);
    if (!LinkCurrent(generation)) return Status::Error("link retired");
    link_socket_ = socket;
  }
  link_state_.store(LinkState::kConnecting, std::memory_order_release);
  Status status = socket->Connect(host, port, timeout_ms);
  if (!status.ok()) return status;
  if (!LinkCurrent(generation)) return Status::Error("link retired");
  // The link is a client of this server too (CLIENT LIST type=master,
  // CLIENT KILL TYPE master closes it, and the link reconnects).
  std::shared_ptr<ClientInfo> info =
      parts_.clients->Register(socket->peer_address(), socket->local_address(), NowMs());
  info->link.store(ClientType::kMaster, std::memory_order_relaxed);
  info->set_close_hook([socket] { socket->Shutdown(); });
  struct Unregister {
    ClientRegistry* clients;
    std::shared_ptr<ClientInfo> info;
    ~Unregister() {
      info->set_close_hook(nullptr);
      clients->Unregister(info->id);
    }
  } unregister{parts_.clients, info};

  link_state_.store(LinkState::kHandshake, std::memory_order_release);
  std::string reply;
  status = Handshake(*socket, &reply);
  if (!status.ok()) return status;
  if (reply.rfind("+FULLRESYNC ", 0) == 0) {
    // +FULLRESYNC <replid> <offset>
    const size_t space = reply.find(' ', 12);
    if (space == std::string::npos) return Status::Error("a malformed reply: " + reply);
    const std::string id = reply.substr(12, space - 12);
    uint64_t offset = 0;
    try {
      offset = std::stoull(reply.substr(space + 1));
    } catch (...) {
      return Status::Error("a malformed reply: " + reply);
    }
    link_state_.store(LinkState::kSync, std::memory_order_release);
    status = LoadFullSync(*socket, id, offset);
    if (!status.ok()) return status.WithContext("full sync: ");
  } else if (reply.rfind("+CONTINUE", 0) == 0) {
    const std::string id = reply.size() > 10 ? reply.substr(10) : "";
    const uint64_t offset = master_repl_offset();
    bool changed = false;
    {
      std::lock_guard lock(mutex_);
      if (!id.empty() && id != replid_) {
        // The primary was promoted: its old id (ours) stays valid here too.
        replid2_ = replid_;
        second_offset_ = static_cast<int64_t>(offset) + 1;
        replid_ = id;
        changed = true;
      }
    }
    if (changed) DisconnectReplicas();
    spdlog::info("replication link to {}:{}: continuing from offset {} (partial resync)", host,
                 port, offset);
  } else {
    return Status::Error("PSYNC: the primary answered " + reply);
  }
  // Our offset, which the primary waits for before it streams after a full sync.
  status = socket->SendCommand({"REPLCONF", "ACK", std::to_string(master_repl_offset())});
  if (!status.ok()) return status;
  link_state_.store(LinkState::kConnected, std::memory_order_release);
  last_io_ms_.store(NowMs(), std::memory_order_relaxed);
  return Stream(generation, *socket);
}

Status Replication::Handshake(LinkSocket& socket, std::string* reply) {
  const ServerConfig config = parts_.config->Get();
  Status status = socket.SendCommand({"PING"});
  if (status.ok()) status = ExpectReply(socket, "PING", /*allow_auth_errors=*/true, reply);
  if (!status.ok()) return status;
  if (!config.masterauth.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!config.masteruser.empty()) auth.push_back(config.masteruser);
    auth.push_back(config.masterauth);
    status = socket.SendCommand(auth);
    if (status.ok()) status = ExpectReply(socket, "AUTH", false, reply);
    if (!status.ok()) return status;
  }
  const uint16_t port =
      config.replica_announce_port != 0 ? config.replica_announce_port : parts_.own_port();
  status = socket.SendCommand({"REPLCONF", "listening-port", std::to_string(port)});
  if (status.ok()) status = ExpectReply(socket, "REPLCONF listening-port", false, reply);
  if (!status.ok()) return status;
  if (!config.replica_announce_ip.empty()) {
    status = socket.SendCommand({"REPLCONF", "ip-address", config.replica_announce_ip});
    if (status.ok()) status = ExpectReply(socket, "REPLCONF ip-address", false, reply);
    if (!status.ok()) return status;
  }
  status = socket.SendCommand({"REPLCONF", "capa", "eof", "capa", "psync2"});
  if (status.ok()) status = ExpectReply(socket, "REPLCONF capa", false, reply);
  if (!status.ok()) return status;
  // PSYNC with what this replica holds, or "? -1" for a full sync: it never
  // synced, or a record it could not apply made it differ (Journal).
  std::vector<std::string> psync = {"PSYNC", "?", "-1"};
  const bool diverged = parts_.journal->unapplied_records() >
                        unapplied_at_sync_.load(std::memory_order_acquire);
  if (synced_.load(std::memory_order_acquire) && !diverged) {
    psync = {"PSYNC", replid(), std::to_string(master_repl_offset() + 1)};
  }
  status = socket.SendCommand(psync);
  if (!status.ok()) return status;
  return ExpectReply(socket, "PSYNC", false, reply);
}

Status Replication::LoadFullSync(LinkSocket& socket, const std::string& replid, uint64_t offset) {
  std::string line;
  do {
    Status status = socket.ReadLine(&line);
    if (!status.ok()) return status;
  } while (line.empty());
  const std::string mark = ParseEofPreamble(line);
  if (mark.empty()) return Status::Error("expected $EOF:<mark>, got " + line.substr(0, 64));
  Durability& durability = **parts_.durability;
  // Clients get -LOADING from here until the primary's data is in place;
  // the old keys go first, so the two are never in memory together.
  durability.BeginLoading();
  // The files will hold neither the old data's stream position nor the new
  // one until a snapshot of the primary's data is saved.
  full_sync_loading_.store(true, std::memory_order_release);
  durability.ForgetReplicationMark();
  struct EndLoading {
    Durability* durability;
    ~EndLoading() { durability->EndLoading(); }
  } end_loading{&durability};
  synced_.store(false, std::memory_order_release);
  {
    KeyLocks::Guard all = parts_.key_locks->LockAll(/*exclusive=*/true);
    parts_.keyspace->Clear();
  }
  const auto start = std::chrono::steady_clock::now();
  EofDelimitedReader reader(mark, [&socket](std::string* out) { return socket.ReadSome(out); });
  StreamFileSystem in(nullptr,
                      [&reader](size_t n, std::string* out) { return reader.Read(n, out); });
  std::vector<LoadedRecord> records;
  {
    // What the primary holds is loaded past this server's own limits.
    AsRecordedScope as_recorded;
    Status status = ReadSnapshot(in, "the primary's stream", parts_.filter_limits(),
                                 parts_.budget, nullptr, &records);
    if (!status.ok()) return status;
  }
  const uint64_t bytes = reader.payload_bytes();
  {
    KeyLocks::Guard all = parts_.key_locks->LockAll(/*exclusive=*/true);
    parts_.keyspace->Clear();
    for (LoadedRecord& record : records) {
      parts_.keyspace->Put(record.name, std::make_shared<KeyEntry>(std::move(record.filter)),
                           record.expire_at_ms);
    }
    parts_.journal->AtBarrier([&](uint64_t next_offset) {
      // From here on this server's offsets are its primary's.
      delta_.store(offset - next_offset, std::memory_order_release);
      ring_.Reset(offset);
      backlog_active_.store(true, std::memory_order_release);
    });
    std::lock_guard lock(mutex_);
    replid_ = replid;
    replid2_ = std::string(40, '0');
    second_offset_ = -1;
    full_sync_loading_.store(false, std::memory_order_release);
  }
  unapplied_at_sync_.store(parts_.journal->unapplied_records(), std::memory_order_release);
  synced_.store(true, std::memory_order_release);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("full sync: {} keys, {} bytes loaded in {:.3f} s ({:.0f} MB/s), offset {}",
               records.size(), bytes, seconds,
               seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0.0, offset);
  // This server's replicas hold a history that is no longer its own.
  DisconnectReplicas();
  // Its files still hold the old data: a snapshot of the new one, when it
  // keeps any (the log alone would replay the old data first).
  const ServerConfig config = parts_.config->Get();
  if (config.appendonly || !config.save.empty()) {
    bool scheduled = false;
    Status saved = durability.StartOrScheduleBackgroundSave(&scheduled);
    if (!saved.ok()) spdlog::warn("saving after the full sync: {}", saved.message());
  }
  return Status::Ok();
}

Status Replication::Stream(uint64_t generation, LinkSocket& socket) {
  auto last_ack = std::chrono::steady_clock::now();
  std::string frame;
  while (LinkCurrent(generation)) {
    // The primary PINGs every repl-ping-replica-period: silence for
    // repl-timeout means it is gone (stopped, or the network is), even
    // when the socket looks open.
    const int64_t silent_ms = NowMs() - last_io_ms_.load(std::memory_order_relaxed);
    const int64_t timeout_ms =
        int64_t{repl_timeout_s_.load(std::memory_order_relaxed)} * 1000;
    if (silent_ms > timeout_ms) {
      return Status::Error("nothing from the primary for " + std::to_string(silent_ms) +
                           " ms (repl-timeout " + std::to_string(timeout_ms / 1000) + " s)");
    }
    const auto now = std::chrono::steady_clock::now();
    const int until_ack = kAckIntervalMs - static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(now - last_ack).count());
    if (until_ack <= 0 || !socket.Readable(until_ack)) {
      Status status = socket.SendCommand({"REPLCONF", "ACK", std::to_string(master_repl_offset())});
      if (!status.ok()) return status;
      last_ack = std::chrono::steady_clock::now();
      continue;
    }
    frame.clear();
    Status status = socket.ReadExact(kFrameBytes, &frame);
    if (status.ok()) status = socket.ReadExact(FrameBodyLength(frame), &frame);
    if (!status.ok()) return status;
    last_io_ms_.store(NowMs(), std::memory_order_relaxed);
    std::lock_guard apply(apply_mutex_);
    if (!LinkCurrent(generation)) break;
    status = apply_(frame);
    if (!status.ok()) {
      return Status::Error("a record could not be applied (" + status.message() +
                           "): this replica needs a full sync");
    }
    if (parts_.journal->unapplied_records() > unapplied_at_sync_.load(std::memory_order_acquire)) {
      return Status::Error("a record could not be applied: this replica needs a full sync");
    }
    // Caught up with what has arrived: ACK now, so a WAIT on the primary
    // returns as soon as the records are applied (Redis's primary asks with
    // GETACK; here the replica tells at once). Under a steady stream more
    // is always readable, so this costs one ACK per pause in the stream.
    if (!socket.Readable(0)) {
      status = socket.SendCommand({"REPLCONF", "ACK", std::to_string(master_repl_offset())});
      if (!status.ok()) return status;
      last_ack = std::chrono::steady_clock::now();
    }
  }
  return Status::Error("link retired");
}

}  // namespace bloomgate
