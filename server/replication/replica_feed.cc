#include "server/replication/replica_feed.h"

#include <algorithm>

namespace bloomgate {

ReplicaFeed::ReplicaFeed(Journal* journal, std::function<void()> wake,
                         std::shared_ptr<ClientInfo> info, std::string ip, uint16_t port)
    : journal_(journal), wake_(std::move(wake)), info_(std::move(info)), ip_(std::move(ip)),
      port_(port) {}

void ReplicaFeed::WakeLocked() {
  if (wake_pending_ || !wake_) return;
  wake_pending_ = true;
  wake_();
}

void ReplicaFeed::OnRecord(const JournalRecord& record) {
  std::lock_guard lock(mutex_);
  if (closed_.load(std::memory_order_relaxed) || overflowed_) return;
  if (stream_.size() - stream_begin_ + record.bytes.size() > kStreamLimit) {
    overflowed_ = true;
    stream_.clear();
    stream_begin_ = 0;
    WakeLocked();
    return;
  }
  stream_.append(record.bytes);
  if (streaming_.load(std::memory_order_relaxed)) WakeLocked();
}

Status ReplicaFeed::PushSnapshot(std::string_view bytes) {
  std::unique_lock lock(mutex_);
  drained_.wait(lock, [this] {
    return closed_.load(std::memory_order_relaxed) || snapshot_.size() < kSnapshotWindow;
  });
  if (closed_.load(std::memory_order_relaxed)) {
    return Status::Error("the replica's connection closed");
  }
  snapshot_.append(bytes);
  WakeLocked();
  return Status::Ok();
}

void ReplicaFeed::SnapshotDone() {
  std::lock_guard lock(mutex_);
  snapshot_done_ = true;
  WakeLocked();
}

void ReplicaFeed::ContinueWith(std::string backlog_bytes) {
  std::lock_guard lock(mutex_);
  stream_.insert(stream_begin_, backlog_bytes);
  snapshot_done_ = true;
  streaming_.store(true, std::memory_order_release);
  WakeLocked();
}

std::string ReplicaFeed::Take(size_t max, bool* overflowed) {
  std::lock_guard lock(mutex_);
  wake_pending_ = false;
  *overflowed = overflowed_;
  std::string out;
  if (overflowed_ || max == 0) return out;
  if (!snapshot_.empty()) {
    const size_t take = std::min(max, snapshot_.size());
    out.assign(snapshot_, 0, take);
    snapshot_.erase(0, take);
    drained_.notify_all();
    return out;
  }
  if (!streaming_.load(std::memory_order_relaxed) || stream_.size() == stream_begin_) return out;
  // Taken from the front in pieces: erased only once half of it is sent,
  // so a long queue costs a linear number of byte moves.
  const size_t take = std::min(max, stream_.size() - stream_begin_);
  out.assign(stream_, stream_begin_, take);
  stream_begin_ += take;
  if (stream_begin_ == stream_.size()) {
    stream_.clear();
    stream_begin_ = 0;
  } else if (stream_begin_ > stream_.size() / 2) {
    stream_.erase(0, stream_begin_);
    stream_begin_ = 0;
  }
  return out;
}

void ReplicaFeed::Closed() {
  {
    std::lock_guard lock(mutex_);
    closed_.store(true, std::memory_order_release);
    streaming_.store(false, std::memory_order_release);
    std::string().swap(snapshot_);
    std::string().swap(stream_);
    stream_begin_ = 0;
  }
  drained_.notify_all();
  // No record reaches it once this returns; the feed itself lives on with
  // the Replication that made it (Journal::Unsubscribe).
  journal_->Unsubscribe(this);
  joined_.store(false, std::memory_order_release);
}

void ReplicaFeed::Ack(uint64_t offset, int64_t now_ms) {
  acked_offset_.store(offset, std::memory_order_release);
  last_ack_ms_.store(now_ms, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  if (snapshot_done_ && snapshot_.empty() && !streaming_.load(std::memory_order_relaxed)) {
    streaming_.store(true, std::memory_order_release);
    WakeLocked();
  }
}

}  // namespace bloomgate
