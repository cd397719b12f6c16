// CLIENT PAUSE / UNPAUSE: which commands must wait, until when, and who is
// waiting. Shared by every event loop thread; the dispatcher asks on every
// command, so the question costs one relaxed load while nothing is paused.
//
// As Redis 7: a pause has a mode (WRITE: commands that may write wait; ALL:
// every command waits) and an end time; a second PAUSE keeps the later end
// and the stricter mode (ALL over WRITE) of the two. A paused command is not
// refused: its connection parks it (CommandOutcome::kPaused) and runs it
// again when the pause ends or CLIENT UNPAUSE wakes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace bloomgate {

enum class PauseMode : uint8_t { kNone = 0, kWrite = 1, kAll = 2 };

class ClientPause {
 public:
  // CLIENT PAUSE: `end_ms` absolute (now + timeout).
  void Pause(PauseMode mode, int64_t end_ms, int64_t now_ms);
  // CLIENT UNPAUSE: ends the pause and wakes every parked connection.
  void Unpause();

  // Whether a pause was set and not yet lifted by UNPAUSE (it may have
  // timed out): the one relaxed load every command pays.
  bool engaged() const { return mode_.load(std::memory_order_relaxed) != 0; }
  // The mode in force at `now_ms` (kNone once the end passed).
  PauseMode ModeAt(int64_t now_ms) const {
    // Relaxed is enough: a command that races a PAUSE may run just before
    // it took effect, as one that arrived a moment earlier would.
    auto mode = static_cast<PauseMode>(mode_.load(std::memory_order_relaxed));
    if (mode == PauseMode::kNone) return mode;
    return now_ms < end_ms_.load(std::memory_order_relaxed) ? mode : PauseMode::kNone;
  }
  // Disengages a pause whose end passed, so commands stop asking the clock.
  void ClearIfEnded(int64_t now_ms);
  // When the pause in force ends (0 = none), for a parked connection's timer.
  int64_t end_ms() const { return end_ms_.load(std::memory_order_relaxed); }

  // A parked connection's wake-up: called (on the UNPAUSE caller's thread,
  // so it must only post to the connection's loop) when UNPAUSE ends the
  // pause early. Returns an id for RemoveWaiter, which the connection calls
  // when it resumes or closes.
  uint64_t AddWaiter(std::function<void()> wake);
  void RemoveWaiter(uint64_t id);
  // Connections parked now: INFO's blocked_clients (Redis counts paused
  // clients there too).
  size_t waiting() const { return waiting_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint8_t> mode_{0};
  std::atomic<int64_t> end_ms_{0};
  std::mutex mutex_;  // serializes Pause/Unpause and guards waiters_
  std::map<uint64_t, std::function<void()>> waiters_;
  uint64_t next_waiter_ = 1;
  std::atomic<size_t> waiting_{0};
};

const char* ToString(PauseMode mode);

}  // namespace bloomgate
