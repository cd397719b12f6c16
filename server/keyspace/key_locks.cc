#include "server/keyspace/key_locks.h"

#include <algorithm>
#include <numeric>

#include "server/keyspace/key_ref.h"

namespace bloomgate {

size_t KeyLocks::StripeOf(std::string_view key) {
  return HashKeyName(key) & (kStripes - 1);
}

KeyLocks::Guard::Guard(KeyLocks* locks, std::vector<size_t> stripes, bool exclusive)
    : locks_(locks), stripes_(std::move(stripes)), exclusive_(exclusive) {
  std::sort(stripes_.begin(), stripes_.end());
  stripes_.erase(std::unique(stripes_.begin(), stripes_.end()), stripes_.end());
  for (size_t stripe : stripes_) {
    if (exclusive_) {
      locks_->stripes_[stripe].mutex.lock();
    } else {
      locks_->stripes_[stripe].mutex.lock_shared();
    }
  }
}

KeyLocks::Guard::Guard(Guard&& other) noexcept
    : locks_(other.locks_), stripes_(std::move(other.stripes_)), exclusive_(other.exclusive_) {
  other.locks_ = nullptr;
  other.stripes_.clear();
}

KeyLocks::Guard::~Guard() {
  if (locks_ == nullptr) return;
  for (auto it = stripes_.rbegin(); it != stripes_.rend(); ++it) {
    if (exclusive_) {
      locks_->stripes_[*it].mutex.unlock();
    } else {
      locks_->stripes_[*it].mutex.unlock_shared();
    }
  }
}

KeyLocks::Guard KeyLocks::Lock(std::vector<size_t> stripes, bool exclusive) {
  return Guard(this, std::move(stripes), exclusive);
}

KeyLocks::Guard KeyLocks::LockAll(bool exclusive) {
  std::vector<size_t> all(kStripes);
  std::iota(all.begin(), all.end(), size_t{0});
  return Guard(this, std::move(all), exclusive);
}

}  // namespace bloomgate
