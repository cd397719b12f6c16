// CLIENT PAUSE / UNPAUSE and the manual failover's pause: which commands
// must wait, until when, and who is waiting. Shared by every event loop
// thread; the dispatcher asks on every command, so the question costs one
// relaxed load while nothing is paused.
//
// As Redis 7: one pause per purpose (a client's CLIENT PAUSE, a manual
// failover on the old master), each with a mode (WRITE: commands that may
// write wait; ALL: every command waits) and an end time. Within a purpose a
// second PAUSE keeps the later end and the stricter mode (ALL over WRITE) of
// the two; across purposes the strictest mode in force wins, each ending at
// its own time. Unpause ends one purpose's pause only: CLIENT UNPAUSE never
// lifts the failover's guard against lost writes, nor the failover's end a
// client's pause. A paused command is not refused: its connection parks it
// (CommandOutcome::kPaused) and runs it again when a pause ends or an
// Unpause wakes it (it parks again if another pause still holds it).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace bloomgate {

enum class PauseMode : uint8_t { kNone = 0, kWrite = 1, kAll = 2 };

// Redis's pause_purpose: who set a pause, and so which Unpause ends it.
enum class PausePurpose : uint8_t { kClientCommand = 0, kFailover = 1 };

class ClientPause {
 public:
  // Pauses for `purpose` until `end_ms` (absolute: now + timeout).
  void Pause(PausePurpose purpose, PauseMode mode, int64_t end_ms, int64_t now_ms);
  // Ends `purpose`'s pause and wakes every parked connection (those another
  // pause still holds park again).
  void Unpause(PausePurpose purpose);

  // Whether some pause was set and not yet lifted by Unpause (it may have
  // timed out): the one relaxed load every command pays.
  bool engaged() const { return engaged_.load(std::memory_order_relaxed) != 0; }
  // The strictest mode in force at `now_ms` (kNone once every end passed).
  PauseMode ModeAt(int64_t now_ms) const {
    // Relaxed is enough: a command that races a PAUSE may run just before
    // it took effect, as one that arrived a moment earlier would.
    PauseMode strictest = PauseMode::kNone;
    for (const Slot& slot : slots_) {
      auto mode = static_cast<PauseMode>(slot.mode.load(std::memory_order_relaxed));
      if (mode > strictest && now_ms < slot.end_ms.load(std::memory_order_relaxed)) {
        strictest = mode;
      }
    }
    return strictest;
  }
  // The mode `purpose`'s own pause has at `now_ms`.
  PauseMode ModeAt(PausePurpose purpose, int64_t now_ms) const;
  // Disengages every pause whose end passed, so commands stop asking the clock.
  void ClearIfEnded(int64_t now_ms);
  // When the last engaged pause ends (0 = none): how long writes, and so
  // expiry, are held.
  int64_t end_ms() const;
  // The earliest end after `now_ms` among the engaged pauses (0 = none): a
  // parked connection's timer, since the mode may soften then.
  int64_t NextEndAfter(int64_t now_ms) const;

  // A parked connection's wake-up: called (on the Unpause caller's thread,
  // so it must only post to the connection's loop) when an Unpause ends a
  // pause early. Returns an id for RemoveWaiter, which the connection calls
  // when it resumes or closes.
  uint64_t AddWaiter(std::function<void()> wake);
  void RemoveWaiter(uint64_t id);
  // Connections parked now: INFO's blocked_clients (Redis counts paused
  // clients there too).
  size_t waiting() const { return waiting_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kPurposes = 2;
  struct Slot {
    std::atomic<uint8_t> mode{0};
    std::atomic<int64_t> end_ms{0};
  };
  // Under mutex_: engaged_ = one bit per purpose whose mode is set.
  void PublishEngaged();

  std::array<Slot, kPurposes> slots_;
  std::atomic<uint8_t> engaged_{0};
  mutable std::mutex mutex_;  // serializes Pause/Unpause and guards waiters_
  std::map<uint64_t, std::function<void()>> waiters_;
  uint64_t next_waiter_ = 1;
  std::atomic<size_t> waiting_{0};
};

const char* ToString(PauseMode mode);

}  // namespace bloomgate
