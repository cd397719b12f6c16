// Reader/writer locks over key names, for transaction isolation and the
// snapshot cut.
//
// Three levels, always taken in this order, so no two lockers can deadlock:
//
//   global_    every command with keys holds it shared; a whole-keyspace
//              writer (FLUSHALL, an EXEC that holds one) and the snapshot cut
//              hold it exclusively: LockAll(true) is this one lock.
//   writers_   every command that holds stripes exclusively also holds it
//              shared; a whole-keyspace reader (KEYS, SCAN) holds it
//              exclusively, so it sees no transaction half done while reads
//              and Bloom adds (shared stripes) go on.
//   stripes_   1024 stripes by key hash: every command holds its keys'
//              stripes shared while it runs; EXEC (and writes that do not
//              commute) hold them exclusively, so no other client's command
//              on those keys can interleave, while commands on other keys go
//              on. Two keys share a stripe with probability 1/1024, which
//              only costs some unneeded waiting. Ascending order.
//
// The global and writers locks prefer writers: once an exclusive locker
// waits, new shared lockers queue behind it, so a snapshot cut waits only for
// the commands already running (microseconds) instead of for a gap in a
// read flood, and holds nothing while it waits. (Taking the 1024 stripes one
// by one instead, a cut stuck behind readers of one key held the rest for
// 24 ms median, 95 ms max, pausing every other client.)
//
// Filter bits themselves are never guarded by these locks (adds are
// lock-free); the locks only order whole commands.
#pragma once

#include <pthread.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "server/keyspace/key_ref.h"

namespace bloomgate {

// pthread's reader/writer lock, set to prefer writers
// (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP: a thread must not take it
// shared twice, which no locker here does). std::shared_mutex, glibc's
// default kind, prefers readers and lets a steady stream of them starve a
// writer.
class WriterPreferringLock {
 public:
  WriterPreferringLock();
  ~WriterPreferringLock();
  WriterPreferringLock(const WriterPreferringLock&) = delete;
  WriterPreferringLock& operator=(const WriterPreferringLock&) = delete;
  void lock() { pthread_rwlock_wrlock(&lock_); }
  void unlock() { pthread_rwlock_unlock(&lock_); }
  void lock_shared() { pthread_rwlock_rdlock(&lock_); }
  void unlock_shared() { pthread_rwlock_unlock(&lock_); }

 private:
  pthread_rwlock_t lock_;
};

class KeyLocks {
 public:
  static constexpr size_t kStripes = 1024;
  // A lock set wider than this takes the whole-keyspace lock of the same
  // mode instead: one lock rather than dozens, and ThreadSanitizer's
  // deadlock detector follows at most 64 locks held by one thread.
  static constexpr size_t kMaxStripesPerLocker = 32;

  static size_t StripeOf(std::string_view key);
  static size_t StripeOf(const KeyRef& key) { return key.hash & (kStripes - 1); }

  // Holds a set of locks until destroyed.
  class Guard {
   public:
    Guard() = default;
    Guard(Guard&& other) noexcept;
    Guard& operator=(Guard&&) = delete;
    ~Guard();

   private:
    friend class KeyLocks;
    enum class Global { kNone, kShared, kExclusive };
    KeyLocks* locks_ = nullptr;
    Global global_ = Global::kNone;
    bool writers_shared_ = false;
    bool writers_exclusive_ = false;
    // Sorted, distinct; inline so that taking a command's locks allocates
    // nothing (a wider set takes the whole-keyspace lock instead).
    std::array<uint16_t, kMaxStripesPerLocker> stripes_{};
    uint8_t stripe_count_ = 0;
    bool stripes_exclusive_ = false;
  };

  // `stripes` may be unsorted and hold duplicates; an empty set takes no lock.
  Guard Lock(std::span<const size_t> stripes, bool exclusive);
  Guard Lock(std::initializer_list<size_t> stripes, bool exclusive) {
    return Lock(std::span<const size_t>(stripes.begin(), stripes.size()), exclusive);
  }
  Guard LockAll(bool exclusive);
  // Turns a shared lock set into the exclusive one of the same keys: lets
  // go of it, then waits for the exclusive locks (an upgrade in place
  // would deadlock against a second upgrader). Nothing held stays held.
  void MakeExclusive(Guard* guard);

  // Locks this thread holds through KeyLocks (for tests, and for entries
  // that must not be freed under them).
  static size_t HeldByThisThread();
  // Keeps `doomed` alive until this thread's last key lock is released, or
  // drops it now if it holds none: freeing a filter (up to gigabytes: 66 ms
  // for 825 MB) must not keep other clients waiting on the keys.
  static void FreeAfterUnlock(std::shared_ptr<void> doomed);

  // Exclusive lockers of the whole keyspace waiting right now (for tests).
  size_t exclusive_waiters() const;

 private:
  void Acquire(Guard* guard);
  void Release(Guard* guard);

  WriterPreferringLock global_;
  WriterPreferringLock writers_;
  struct alignas(64) Stripe {
    WriterPreferringLock mutex;
  };
  std::array<Stripe, kStripes> stripes_;
  std::atomic<size_t> exclusive_waiters_{0};
};

}  // namespace bloomgate
