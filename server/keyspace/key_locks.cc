#include "server/keyspace/key_locks.h"

#include <algorithm>
#include <cassert>

namespace bloomgate {
namespace {

thread_local size_t held_locks = 0;
// What FreeAfterUnlock deferred; cleared when held_locks drops to 0.
thread_local std::vector<std::shared_ptr<void>> release_after_unlock;

void ReleaseDeferred() {
  // Moved out first: a destructor that runs here may defer again.
  std::vector<std::shared_ptr<void>> doomed;
  doomed.swap(release_after_unlock);
}

}  // namespace

WriterPreferringLock::WriterPreferringLock() {
  pthread_rwlockattr_t attr;
  pthread_rwlockattr_init(&attr);
  pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&lock_, &attr);
  pthread_rwlockattr_destroy(&attr);
}

WriterPreferringLock::~WriterPreferringLock() { pthread_rwlock_destroy(&lock_); }

size_t KeyLocks::StripeOf(std::string_view key) { return HashKeyName(key) & (kStripes - 1); }

size_t KeyLocks::HeldByThisThread() { return held_locks; }

void KeyLocks::FreeAfterUnlock(std::shared_ptr<void> doomed) {
  if (doomed == nullptr) return;
  if (held_locks == 0) return;  // `doomed` goes out of scope here: freed now
  release_after_unlock.push_back(std::move(doomed));
}

size_t KeyLocks::exclusive_waiters() const {
  return exclusive_waiters_.load(std::memory_order_relaxed);
}

KeyLocks::Guard::Guard(Guard&& other) noexcept
    : locks_(other.locks_),
      global_(other.global_),
      writers_shared_(other.writers_shared_),
      writers_exclusive_(other.writers_exclusive_),
      stripes_(other.stripes_),
      stripe_count_(other.stripe_count_),
      stripes_exclusive_(other.stripes_exclusive_) {
  other.locks_ = nullptr;
}

KeyLocks::Guard::~Guard() {
  if (locks_ != nullptr) locks_->Release(this);
}

void KeyLocks::Acquire(Guard* guard) {
  guard->locks_ = this;
  size_t taken = 0;
  if (guard->global_ == Guard::Global::kExclusive) {
    // Relaxed: a test-visible gauge, publishes nothing.
    exclusive_waiters_.fetch_add(1, std::memory_order_relaxed);
    global_.lock();
    exclusive_waiters_.fetch_sub(1, std::memory_order_relaxed);
    ++taken;
  } else if (guard->global_ == Guard::Global::kShared) {
    global_.lock_shared();
    ++taken;
  }
  if (guard->writers_exclusive_) {
    writers_.lock();
    ++taken;
  } else if (guard->writers_shared_) {
    writers_.lock_shared();
    ++taken;
  }
  for (size_t i = 0; i < guard->stripe_count_; ++i) {
    const size_t stripe = guard->stripes_[i];
    if (guard->stripes_exclusive_) {
      stripes_[stripe].mutex.lock();
    } else {
      stripes_[stripe].mutex.lock_shared();
    }
    ++taken;
  }
  held_locks += taken;
}

void KeyLocks::Release(Guard* guard) {
  size_t released = 0;
  for (size_t i = guard->stripe_count_; i-- > 0;) {
    const size_t stripe = guard->stripes_[i];
    if (guard->stripes_exclusive_) {
      stripes_[stripe].mutex.unlock();
    } else {
      stripes_[stripe].mutex.unlock_shared();
    }
    ++released;
  }
  if (guard->writers_exclusive_) {
    writers_.unlock();
    ++released;
  } else if (guard->writers_shared_) {
    writers_.unlock_shared();
    ++released;
  }
  if (guard->global_ == Guard::Global::kExclusive) {
    global_.unlock();
    ++released;
  } else if (guard->global_ == Guard::Global::kShared) {
    global_.unlock_shared();
    ++released;
  }
  guard->locks_ = nullptr;
  held_locks -= released;
  if (held_locks == 0 && !release_after_unlock.empty()) ReleaseDeferred();
}

KeyLocks::Guard KeyLocks::Lock(std::span<const size_t> stripes, bool exclusive) {
  if (stripes.empty()) return Guard();
  std::vector<uint16_t> wide;  // only for more stripes than the guard holds
  uint16_t few[kMaxStripesPerLocker];
  uint16_t* begin = few;
  if (stripes.size() > kMaxStripesPerLocker) {
    wide.resize(stripes.size());
    begin = wide.data();
  }
  for (size_t i = 0; i < stripes.size(); ++i) {
    assert(stripes[i] < kStripes);
    begin[i] = static_cast<uint16_t>(stripes[i]);
  }
  uint16_t* end = begin + stripes.size();
  std::sort(begin, end);
  end = std::unique(begin, end);
  const size_t count = static_cast<size_t>(end - begin);
  if (count > kMaxStripesPerLocker) return LockAll(exclusive);
  Guard guard;
  guard.global_ = Guard::Global::kShared;
  guard.writers_shared_ = exclusive;
  std::copy(begin, end, guard.stripes_.begin());
  guard.stripe_count_ = static_cast<uint8_t>(count);
  guard.stripes_exclusive_ = exclusive;
  Acquire(&guard);
  return guard;
}

KeyLocks::Guard KeyLocks::LockAll(bool exclusive) {
  Guard guard;
  if (exclusive) {
    guard.global_ = Guard::Global::kExclusive;
  } else {
    guard.global_ = Guard::Global::kShared;
    guard.writers_exclusive_ = true;
  }
  Acquire(&guard);
  return guard;
}

void KeyLocks::MakeExclusive(Guard* guard) {
  if (guard->locks_ == nullptr) return;
  if (guard->global_ == Guard::Global::kExclusive || guard->stripes_exclusive_) return;
  Release(guard);
  if (guard->stripe_count_ == 0) {  // a wide set: the whole keyspace, exclusively
    guard->global_ = Guard::Global::kExclusive;
    guard->writers_exclusive_ = false;
  } else {
    guard->writers_shared_ = true;
    guard->stripes_exclusive_ = true;
  }
  Acquire(guard);
}

}  // namespace bloomgate
