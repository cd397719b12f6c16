#include "server/clients/client_pause.h"

#include <algorithm>
#include <vector>

namespace bloomgate {

void ClientPause::Pause(PauseMode mode, int64_t end_ms, int64_t now_ms) {
  std::lock_guard lock(mutex_);
  auto current = static_cast<PauseMode>(mode_.load(std::memory_order_relaxed));
  const int64_t current_end = end_ms_.load(std::memory_order_relaxed);
  if (current != PauseMode::kNone && now_ms < current_end) {
    // A pause in force: the later end and the stricter mode win (Redis's
    // "old pause-all takes precedence over new pause-write").
    mode = std::max(mode, current);
    end_ms = std::max(end_ms, current_end);
  }
  // End first, then mode: a reader that sees the new mode sees an end at
  // least as late as the one meant for it, or the old one for an instant.
  end_ms_.store(end_ms, std::memory_order_relaxed);
  mode_.store(static_cast<uint8_t>(mode), std::memory_order_relaxed);
}

void ClientPause::Unpause() {
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard lock(mutex_);
    mode_.store(0, std::memory_order_relaxed);
    end_ms_.store(0, std::memory_order_relaxed);
    for (auto& [id, fn] : waiters_) wake.push_back(std::move(fn));
    waiters_.clear();
    waiting_.store(0, std::memory_order_relaxed);
  }
  // Outside the lock: each only posts to its connection's loop, which then
  // removes nothing (the list is already empty) and runs its command.
  for (auto& fn : wake) fn();
}

void ClientPause::ClearIfEnded(int64_t now_ms) {
  std::lock_guard lock(mutex_);
  if (now_ms >= end_ms_.load(std::memory_order_relaxed)) mode_.store(0, std::memory_order_relaxed);
}

uint64_t ClientPause::AddWaiter(std::function<void()> wake) {
  std::lock_guard lock(mutex_);
  uint64_t id = next_waiter_++;
  waiters_.emplace(id, std::move(wake));
  waiting_.store(waiters_.size(), std::memory_order_relaxed);
  return id;
}

void ClientPause::RemoveWaiter(uint64_t id) {
  std::lock_guard lock(mutex_);
  waiters_.erase(id);
  waiting_.store(waiters_.size(), std::memory_order_relaxed);
}

const char* ToString(PauseMode mode) {
  switch (mode) {
    case PauseMode::kNone: return "none";
    case PauseMode::kWrite: return "write";
    case PauseMode::kAll: return "all";
  }
  return "none";
}

}  // namespace bloomgate
