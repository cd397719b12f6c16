#include "server/clients/client_pause.h"

#include <algorithm>
#include <vector>

namespace bloomgate {

void ClientPause::Pause(PausePurpose purpose, PauseMode mode, int64_t end_ms, int64_t now_ms) {
  std::lock_guard lock(mutex_);
  Slot& slot = slots_[static_cast<size_t>(purpose)];
  auto current = static_cast<PauseMode>(slot.mode.load(std::memory_order_relaxed));
  const int64_t current_end = slot.end_ms.load(std::memory_order_relaxed);
  if (current != PauseMode::kNone && now_ms < current_end) {
    // This purpose's pause in force: the later end and the stricter mode
    // win (Redis's "old pause-all takes precedence over new pause-write").
    mode = std::max(mode, current);
    end_ms = std::max(end_ms, current_end);
  }
  // End first, then mode: a reader that sees the new mode sees an end at
  // least as late as the one meant for it, or the old one for an instant.
  slot.end_ms.store(end_ms, std::memory_order_relaxed);
  slot.mode.store(static_cast<uint8_t>(mode), std::memory_order_relaxed);
  PublishEngaged();
}

void ClientPause::Unpause(PausePurpose purpose) {
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard lock(mutex_);
    Slot& slot = slots_[static_cast<size_t>(purpose)];
    slot.mode.store(0, std::memory_order_relaxed);
    slot.end_ms.store(0, std::memory_order_relaxed);
    PublishEngaged();
    for (auto& [id, fn] : waiters_) wake.push_back(std::move(fn));
    waiters_.clear();
    waiting_.store(0, std::memory_order_relaxed);
  }
  // Outside the lock: each only posts to its connection's loop, which then
  // removes nothing (the list is already empty) and runs its command, or
  // parks it again if the other purpose's pause still holds it.
  for (auto& fn : wake) fn();
}

PauseMode ClientPause::ModeAt(PausePurpose purpose, int64_t now_ms) const {
  const Slot& slot = slots_[static_cast<size_t>(purpose)];
  auto mode = static_cast<PauseMode>(slot.mode.load(std::memory_order_relaxed));
  return now_ms < slot.end_ms.load(std::memory_order_relaxed) ? mode : PauseMode::kNone;
}

void ClientPause::ClearIfEnded(int64_t now_ms) {
  std::lock_guard lock(mutex_);
  for (Slot& slot : slots_) {
    if (now_ms >= slot.end_ms.load(std::memory_order_relaxed)) {
      slot.mode.store(0, std::memory_order_relaxed);
    }
  }
  PublishEngaged();
}

int64_t ClientPause::end_ms() const {
  std::lock_guard lock(mutex_);
  int64_t latest = 0;
  for (const Slot& slot : slots_) {
    if (slot.mode.load(std::memory_order_relaxed) != 0) {
      latest = std::max(latest, slot.end_ms.load(std::memory_order_relaxed));
    }
  }
  return latest;
}

int64_t ClientPause::NextEndAfter(int64_t now_ms) const {
  std::lock_guard lock(mutex_);
  int64_t earliest = 0;
  for (const Slot& slot : slots_) {
    const int64_t end = slot.end_ms.load(std::memory_order_relaxed);
    if (slot.mode.load(std::memory_order_relaxed) != 0 && end > now_ms &&
        (earliest == 0 || end < earliest)) {
      earliest = end;
    }
  }
  return earliest;
}

void ClientPause::PublishEngaged() {
  uint8_t bits = 0;
  for (size_t i = 0; i < kPurposes; ++i) {
    if (slots_[i].mode.load(std::memory_order_relaxed) != 0) bits |= static_cast<uint8_t>(1u << i);
  }
  engaged_.store(bits, std::memory_order_relaxed);
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
