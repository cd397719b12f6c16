#include "server/replication/replication.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "server/base/clock.h"
#include "server/replication/eof_framing.h"
#include "server/replication/link_socket.h"
#include "server/replication/stream_file_system.h"

namespace bloomgate {
namespace {

// Redis's replication ids: 40 random hexadecimal characters.
std::string MakeReplicationId() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device device;
  std::string id(40, '0');
  for (char& c : id) c = kHex[device() & 15];
  return id;
}

const std::string kNoReplicationId(40, '0');

// REPLICAOF NO ONE waits at most this many ms for a record being applied.
constexpr int kApplyWaitAttempts = 1000;

}  // namespace

Replication::Replication(const ReplicationParts& parts)
    : parts_(parts),
      ring_(parts.config->Get().repl_backlog_size),
      replid_(MakeReplicationId()),
      replid2_(kNoReplicationId) {
  parts_.journal->Subscribe(this);
  // A replica never expires keys itself, from start-up on: the sweep after
  // loading would publish deletions its primary never sent, and its offset
  // would no longer be its primary's.
  if (!parts_.config->Get().replicaof.empty()) parts_.keyspace->HoldExpiryAsReplica(true);
}

Replication::~Replication() {
  Stop();
  // The durability outlives this room (ServerContext declares it first):
  // a cut after this must not ask it where the data stands.
  if (*parts_.durability) (*parts_.durability)->set_replication_mark_source(nullptr);
  parts_.journal->Unsubscribe(this);
}

void Replication::Start() {
  Durability& durability = **parts_.durability;
  durability.set_replication_mark_source(
      [this](uint64_t next_offset) { return MarkAt(next_offset); });
  if (std::optional<Durability::RestoredMark> restored = durability.restored_mark()) {
    Restore(*restored);
  }
  {
    std::lock_guard lock(mutex_);
    if (!stopping_ && !pinger_.joinable()) pinger_ = std::thread([this] { PingLoop(); });
  }
  const std::string replicaof = parts_.config->Get().replicaof;
  const size_t space = replicaof.find(' ');
  if (space == std::string::npos) return;
  Follow(replicaof.substr(0, space),
         static_cast<uint16_t>(std::stoul(replicaof.substr(space + 1))));
}

void Replication::RequestStop() {
  std::vector<std::shared_ptr<ReplicaFeed>> feeds;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    link_generation_.fetch_add(1, std::memory_order_acq_rel);
    if (link_socket_) link_socket_->Shutdown();
    feeds = feeds_;
  }
  link_wake_.notify_all();
  // A full sync waiting for its replica to read ends with an error.
  for (const std::shared_ptr<ReplicaFeed>& feed : feeds) {
    if (!feed->closed()) feed->Closed();
  }
}

void Replication::Stop() {
  RequestStop();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    if (link_thread_.joinable()) threads.push_back(std::move(link_thread_));
    if (pinger_.joinable()) threads.push_back(std::move(pinger_));
    for (std::thread& thread : threads_) threads.push_back(std::move(thread));
    threads_.clear();
  }
  for (std::thread& thread : threads) thread.join();
}

// ------------------------------------------------------------------ role ----

bool Replication::refuses_writes() const {
  return is_replica() && read_only_.load(std::memory_order_relaxed);
}

void Replication::RetireLinkLocked() {
  link_generation_.fetch_add(1, std::memory_order_acq_rel);
  if (link_socket_) link_socket_->Shutdown();
  if (link_thread_.joinable()) threads_.push_back(std::move(link_thread_));
  link_wake_.notify_all();
}

void Replication::Follow(const std::string& host, uint16_t port) {
  std::lock_guard lock(mutex_);
  if (stopping_) return;
  if (is_replica() && host == master_host_ && port == master_port_) return;
  RetireLinkLocked();
  master_host_ = host;
  master_port_ = port;
  replica_.store(true, std::memory_order_release);
  // A replica never expires keys itself: its primary's DEL removes them.
  parts_.keyspace->HoldExpiryAsReplica(true);
  link_state_.store(LinkState::kConnect, std::memory_order_release);
  link_down_since_ms_.store(NowMs(), std::memory_order_relaxed);
  const uint64_t generation = link_generation_.load(std::memory_order_acquire);
  spdlog::info("following the primary at {}:{}", host, port);
  link_thread_ = std::thread([this, generation, host, port] { LinkLoop(generation, host, port); });
}

int64_t Replication::DataAgeMs(int64_t now_ms) const {
  if (!is_replica()) return 0;
  const bool up = link_state_.load(std::memory_order_acquire) == LinkState::kConnected;
  const int64_t since = up ? last_io_ms_.load(std::memory_order_relaxed)
                           : link_down_since_ms_.load(std::memory_order_relaxed);
  return since == 0 ? 0 : std::max<int64_t>(now_ms - since, 0);
}

void Replication::Unfollow() {
  {
    std::lock_guard lock(mutex_);
    if (!is_replica()) return;
    RetireLinkLocked();
    replica_.store(false, std::memory_order_release);
    link_state_.store(LinkState::kNone, std::memory_order_release);
    master_host_.clear();
    master_port_ = 0;
  }
  // No record of the old primary is applied after this: the link checks
  // its generation under apply_mutex_ before each one, so once the mutex
  // is free the offset below is final. Waited for with a bound, never
  // blocking: REPLICAOF NO ONE inside EXEC holds the transaction's key
  // locks, which the record being applied may be waiting for.
  for (int attempt = 0; attempt < kApplyWaitAttempts; ++attempt) {
    if (apply_mutex_.try_lock()) {
      apply_mutex_.unlock();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  parts_.keyspace->HoldExpiryAsReplica(false);
  // A new history starts here; the saved position is the old one's.
  (*parts_.durability)->ForgetReplicationMark();
  const uint64_t offset = master_repl_offset();
  {
    std::lock_guard lock(mutex_);
    // Redis's PSYNC2: the old id stays valid up to here, so replicas of the
    // old primary that follow this one continue instead of a full sync.
    replid2_ = replid_;
    second_offset_ = static_cast<int64_t>(offset) + 1;
    replid_ = MakeReplicationId();
  }
  ActivateBacklog();
  spdlog::info("a primary now (REPLICAOF NO ONE): replication id {}, offset {}", replid(), offset);
}

// ------------------------------------------------------------- the PING ----

void Replication::PingLoop() {
  for (;;) {
    const auto period = std::chrono::seconds(parts_.config->Get().repl_ping_replica_period);
    {
      std::unique_lock lock(mutex_);
      if (link_wake_.wait_for(lock, period, [this] { return stopping_; })) return;
    }
    PingReplicas();
  }
}

void Replication::PingReplicas() {
  // A replica passes its primary's PINGs on to its own replicas.
  if (is_replica()) return;
  if (parts_.pause != nullptr && parts_.pause->ModeAt(NowMs()) != PauseMode::kNone) return;
  bool any = false;
  {
    std::lock_guard lock(mutex_);
    for (const std::shared_ptr<ReplicaFeed>& feed : feeds_) any = any || !feed->closed();
  }
  if (!any) return;
  JournalSession session;
  const std::string_view ping[] = {"PING"};
  parts_.journal->RecordCommand(session, NowMs(), ping);
  // In the log as soon as a client's write would be: a primary restarted
  // after kill -9 then holds every PING its replicas may have applied.
  Status status = parts_.journal->AwaitForReply(session);
  if (!status.ok()) spdlog::warn("logging the PING to replicas: {}", status.message());
}

// ------------------------------------------------------------ the mark ----

std::optional<ReplicationMark> Replication::MarkAt(uint64_t next_offset) {
  if (full_sync_loading_.load(std::memory_order_acquire)) return std::nullopt;
  if (parts_.journal->unapplied_records() > unapplied_at_sync_.load(std::memory_order_acquire)) {
    return std::nullopt;
  }
  ReplicationMark mark;
  mark.offset = next_offset + delta_.load(std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  mark.replid = replid_;
  return mark;
}

void Replication::Restore(const Durability::RestoredMark& restored) {
  const ReplicationMark& mark = restored.mark;
  const bool replica = !parts_.config->Get().replicaof.empty();
  parts_.journal->AtBarrier([&](uint64_t next_offset) {
    delta_.store(mark.offset - restored.journal_offset, std::memory_order_release);
    // From the next record on; records published since the load (the
    // expiry sweep's deletions on a primary) are not in it.
    ring_.Reset(next_offset + mark.offset - restored.journal_offset);
    backlog_active_.store(true, std::memory_order_release);
  });
  {
    std::lock_guard lock(mutex_);
    if (replica) {
      // Redis's cached master made from the saved id and offset: the
      // handshake asks for PSYNC <id> <offset + 1>.
      replid_ = mark.replid;
    } else {
      // Redis 7: a primary restarted from data with a replication id keeps
      // it as its second id, valid up to the offset the data holds.
      replid2_ = mark.replid;
      second_offset_ = static_cast<int64_t>(mark.offset) + 1;
    }
  }
  if (replica) {
    unapplied_at_sync_.store(parts_.journal->unapplied_records(), std::memory_order_release);
    synced_.store(true, std::memory_order_release);
  }
  spdlog::info("replication: the data holds offset {} of stream {}; {}", mark.offset,
               mark.replid,
               replica ? "the replica asks its primary to continue from there"
                       : "kept as master_replid2, so replicas of it continue");
}

// ---------------------------------------------------------- the backlog ----

void Replication::OnRecord(const JournalRecord& record) {
  const uint64_t end = record.offset + delta_.load(std::memory_order_relaxed);
  if (!ring_.Append(record.bytes, end)) {
    spdlog::warn("a record of {} bytes is larger than repl-backlog-size ({} bytes): a replica "
                 "behind offset {} needs a full sync",
                 record.bytes.size(), ring_.capacity(), end);
  }
}

void Replication::ActivateBacklog() {
  parts_.journal->AtBarrier([this](uint64_t next_offset) {
    if (backlog_active_.load(std::memory_order_relaxed)) return;
    ring_.Reset(next_offset + delta_.load(std::memory_order_relaxed));
    backlog_active_.store(true, std::memory_order_release);
  });
}

void Replication::ApplyConfig(const ServerConfig& config) {
  read_only_.store(config.replica_read_only, std::memory_order_relaxed);
  min_replicas_.store(config.min_replicas_to_write, std::memory_order_relaxed);
  min_replicas_max_lag_s_.store(config.min_replicas_max_lag, std::memory_order_relaxed);
  repl_timeout_s_.store(config.repl_timeout, std::memory_order_relaxed);
  parts_.journal->AtBarrier([this, &config](uint64_t) {
    if (ring_.capacity() != config.repl_backlog_size) ring_.Resize(config.repl_backlog_size);
  });
}

uint64_t Replication::master_repl_offset() const {
  uint64_t offset = 0;
  parts_.journal->AtBarrier([this, &offset](uint64_t next_offset) {
    offset = next_offset + delta_.load(std::memory_order_relaxed);
  });
  return offset;
}

uint64_t Replication::ReplicationOffsetOf(uint64_t journal_offset) const {
  return journal_offset + delta_.load(std::memory_order_acquire);
}

std::string Replication::replid() const {
  std::lock_guard lock(mutex_);
  return replid_;
}

// ----------------------------------------------------- the primary's side ----

std::string Replication::Psync(ClientState& client, std::string_view replid, int64_t offset) {
  ActivateBacklog();
  std::string ip = client.replica_announced_ip;
  if (ip.empty() && client.info) ip = client.info->addr.substr(0, client.info->addr.rfind(':'));
  auto feed = std::make_shared<ReplicaFeed>(parts_.journal, client.wake_subscriber, client.info,
                                            ip, client.replica_listening_port);
  bool known = false;
  std::string own_id;
  {
    std::lock_guard lock(mutex_);
    own_id = replid_;
    known = replid == replid_ ||
            (replid == replid2_ && offset <= second_offset_);
  }
  bool continued = false;
  if (known && offset >= 1) {
    // Joined in the barrier that copies the backlog: the feed gets every
    // byte from the replica's offset on, exactly once.
    const uint64_t from = static_cast<uint64_t>(offset) - 1;
    parts_.journal->Join(feed.get(), [&](uint64_t) {
      std::string bytes;
      if (!ring_.CopyFrom(from, &bytes)) return;
      feed->Joined();
      feed->ContinueWith(std::move(bytes));
      continued = true;
    });
    if (!continued) parts_.journal->Unsubscribe(feed.get());
  }
  client.link_outbox = feed;
  if (client.info) client.info->link.store(ClientType::kReplica, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  feeds_.push_back(feed);
  if (continued) {
    sync_partial_ok_.fetch_add(1, std::memory_order_relaxed);
    spdlog::info("replica {}:{} continues from offset {} (partial resync)", feed->ip(),
                 feed->port(), offset);
    return "+CONTINUE " + own_id;
  }
  if (replid != "?") sync_partial_err_.fetch_add(1, std::memory_order_relaxed);
  sync_full_.fetch_add(1, std::memory_order_relaxed);
  threads_.emplace_back([this, feed] { RunFullSync(feed); });
  return "";
}

void Replication::RunFullSync(std::shared_ptr<ReplicaFeed> feed) {
  const std::string mark = MakeEofMark();
  StreamFileSystem out([&feed](std::string_view bytes) { return feed->PushSnapshot(bytes); },
                       nullptr);
  uint64_t start_offset = 0;
  const auto start = std::chrono::steady_clock::now();
  uint64_t bytes = 0;
  Status status = (*parts_.durability)->StreamSnapshot(
      out, feed.get(), [&](uint64_t next_offset) {
        start_offset = next_offset + delta_.load(std::memory_order_relaxed);
        std::string id;
        {
          std::lock_guard lock(mutex_);
          id = replid_;
        }
        feed->Joined();
        // The window is empty: this never waits inside the barrier.
        (void)feed->PushSnapshot("+FULLRESYNC " + id + " " + std::to_string(start_offset) +
                                 "\r\n" + EofPreamble(mark));
      },
      &bytes);
  if (status.ok()) status = feed->PushSnapshot(mark);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) {
    spdlog::warn("full sync to replica {}:{} failed: {}", feed->ip(), feed->port(),
                 status.message());
    if (feed->info()) feed->info()->RequestClose();
    return;
  }
  feed->SnapshotDone();
  spdlog::info("full sync to replica {}:{}: snapshot of {} bytes at offset {} sent in {:.3f} s "
               "({:.0f} MB/s)",
               feed->ip(), feed->port(), bytes, start_offset, seconds,
               seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0.0);
}

void Replication::Ack(ClientState& client, uint64_t offset) {
  if (!client.link_outbox) return;
  static_cast<ReplicaFeed*>(client.link_outbox.get())->Ack(offset, NowMs());
  std::vector<std::function<void()>> wakes;
  {
    std::lock_guard lock(wait_mutex_);
    for (const auto& [id, wake] : ack_waiters_) wakes.push_back(wake);
  }
  for (const std::function<void()>& wake : wakes) wake();
}

bool Replication::WaitDone(const ClientInfo* client, uint64_t numreplicas, int64_t timeout_ms,
                           int64_t now_ms, int64_t* acked) {
  Wait wait;
  bool known = false;
  {
    std::lock_guard lock(wait_mutex_);
    auto it = waits_.find(client);
    if (it != waits_.end()) {
      wait = it->second;
      known = true;
    }
  }
  if (!known) {
    wait.offset = master_repl_offset();
    wait.deadline_ms = timeout_ms == 0 ? 0 : now_ms + timeout_ms;
    std::lock_guard lock(wait_mutex_);
    waits_[client] = wait;
  }
  *acked = static_cast<int64_t>(ReplicasAcked(wait.offset));
  return static_cast<uint64_t>(*acked) >= numreplicas ||
         (wait.deadline_ms != 0 && now_ms >= wait.deadline_ms);
}

bool Replication::Waiting(const ClientInfo* client, int64_t* deadline_ms) const {
  std::lock_guard lock(wait_mutex_);
  auto it = waits_.find(client);
  if (it == waits_.end()) return false;
  *deadline_ms = it->second.deadline_ms;
  return true;
}

void Replication::EndWait(const ClientInfo* client) {
  std::lock_guard lock(wait_mutex_);
  waits_.erase(client);
}

uint64_t Replication::AddAckWaiter(std::function<void()> wake) {
  std::lock_guard lock(wait_mutex_);
  const uint64_t id = next_ack_waiter_++;
  ack_waiters_.emplace(id, std::move(wake));
  return id;
}

size_t Replication::waiting_clients() const {
  std::lock_guard lock(wait_mutex_);
  return ack_waiters_.size();
}

void Replication::RemoveAckWaiter(uint64_t id) {
  std::lock_guard lock(wait_mutex_);
  ack_waiters_.erase(id);
}

void Replication::DisconnectReplicas() {
  std::vector<std::shared_ptr<ReplicaFeed>> feeds;
  {
    std::lock_guard lock(mutex_);
    feeds = feeds_;
  }
  for (const std::shared_ptr<ReplicaFeed>& feed : feeds) {
    if (!feed->closed() && feed->info()) feed->info()->RequestClose();
  }
}

size_t Replication::ReplicasAcked(uint64_t offset) const {
  std::lock_guard lock(mutex_);
  size_t count = 0;
  for (const std::shared_ptr<ReplicaFeed>& feed : feeds_) {
    if (!feed->closed() && feed->online() && feed->acked_offset() >= offset) ++count;
  }
  return count;
}

bool Replication::EnoughGoodReplicas(int64_t now_ms) const {
  const uint32_t needed = min_replicas_.load(std::memory_order_relaxed);
  if (needed == 0 || is_replica()) return true;
  const int64_t max_lag_ms =
      static_cast<int64_t>(min_replicas_max_lag_s_.load(std::memory_order_relaxed)) * 1000;
  std::lock_guard lock(mutex_);
  size_t good = 0;
  for (const std::shared_ptr<ReplicaFeed>& feed : feeds_) {
    if (!feed->closed() && feed->online() && now_ms - feed->last_ack_ms() <= max_lag_ms) ++good;
  }
  return good >= needed;
}

std::vector<Replication::ReplicaView> Replication::Replicas() const {
  std::vector<ReplicaView> views;
  std::lock_guard lock(mutex_);
  for (const std::shared_ptr<ReplicaFeed>& feed : feeds_) {
    if (feed->closed()) continue;
    views.push_back({.ip = feed->ip(),
                     .port = feed->port(),
                     .offset = feed->acked_offset(),
                     .online = feed->online(),
                     .last_ack_ms = feed->last_ack_ms()});
  }
  return views;
}

Replication::PrimaryView Replication::Primary() const {
  PrimaryView view;
  {
    std::lock_guard lock(mutex_);
    view.host = master_host_;
    view.port = master_port_;
  }
  switch (link_state_.load(std::memory_order_acquire)) {
    case LinkState::kConnecting: view.state = "connecting"; break;
    case LinkState::kHandshake: view.state = "handshake"; break;
    case LinkState::kSync: view.state = "sync"; break;
    case LinkState::kConnected: view.state = "connected"; break;
    default: view.state = "connect"; break;
  }
  return view;
}

// ---------------------------------------------------------------- INFO ----

std::string Replication::InfoFields() const {
  const ServerConfig config = parts_.config->Get();
  const int64_t now = NowMs();
  const uint64_t offset = master_repl_offset();
  std::string out;
  auto line = [&out](std::string_view name, const std::string& value) {
    out.append(name).append(":").append(value).append("\r\n");
  };
  if (is_replica()) {
    const PrimaryView primary = Primary();
    const LinkState state = link_state_.load(std::memory_order_acquire);
    line("role", "slave");
    line("master_host", primary.host);
    line("master_port", std::to_string(primary.port));
    line("master_link_status", state == LinkState::kConnected ? "up" : "down");
    const int64_t last_io = last_io_ms_.load(std::memory_order_relaxed);
    line("master_last_io_seconds_ago",
         last_io == 0 || state != LinkState::kConnected ? "-1" : std::to_string((now - last_io) / 1000));
    line("master_sync_in_progress", state == LinkState::kSync ? "1" : "0");
    line("slave_read_repl_offset", std::to_string(offset));
    line("slave_repl_offset", std::to_string(offset));
    if (state != LinkState::kConnected) {
      line("master_link_down_since_seconds",
           std::to_string((now - link_down_since_ms_.load(std::memory_order_relaxed)) / 1000));
    }
    line("slave_priority", std::to_string(config.replica_priority));
    line("slave_read_only", config.replica_read_only ? "1" : "0");
    line("replica_announced", config.replica_announced ? "1" : "0");
  } else {
    line("role", "master");
  }
  const std::vector<ReplicaView> replicas = Replicas();
  line("connected_slaves", std::to_string(replicas.size()));
  for (size_t i = 0; i < replicas.size(); ++i) {
    const ReplicaView& r = replicas[i];
    const int64_t lag = r.last_ack_ms == 0 ? 0 : (now - r.last_ack_ms) / 1000;
    line("slave" + std::to_string(i),
         "ip=" + r.ip + ",port=" + std::to_string(r.port) +
             ",state=" + (r.online ? "online" : "wait_bgsave") +
             ",offset=" + std::to_string(r.offset) + ",lag=" + std::to_string(lag));
  }
  line("master_failover_state", "no-failover");
  {
    std::lock_guard lock(mutex_);
    line("master_replid", replid_);
    line("master_replid2", replid2_);
  }
  line("master_repl_offset", std::to_string(offset));
  {
    std::lock_guard lock(mutex_);
    line("second_repl_offset", std::to_string(second_offset_));
  }
  uint64_t first = 0, histlen = 0;
  parts_.journal->AtBarrier([&](uint64_t) {
    first = ring_.start() + 1;
    histlen = ring_.histlen();
  });
  const bool active = backlog_active_.load(std::memory_order_acquire);
  line("repl_backlog_active", active ? "1" : "0");
  line("repl_backlog_size", std::to_string(config.repl_backlog_size));
  line("repl_backlog_first_byte_offset", std::to_string(active ? first : 0));
  line("repl_backlog_histlen", std::to_string(active ? histlen : 0));
  return out;
}

}  // namespace bloomgate
