#include "server/keyspace/lazy_freer.h"

#include <utility>

namespace bloomgate {

LazyFreer::LazyFreer() { thread_ = std::thread([this] { Run(); }); }

LazyFreer::~LazyFreer() { Stop(); }

void LazyFreer::Free(std::shared_ptr<void> doomed) {
  if (doomed == nullptr) return;
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      queue_.push_back(std::move(doomed));
      ++pending_;
      wake_.notify_one();
      return;
    }
  }
  doomed.reset();  // stopped: freed here
}

uint64_t LazyFreer::pending() const {
  std::lock_guard lock(mutex_);
  return pending_;
}

uint64_t LazyFreer::freed() const {
  std::lock_guard lock(mutex_);
  return freed_;
}

void LazyFreer::WaitIdle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return pending_ == 0; });
}

void LazyFreer::Stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void LazyFreer::Run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and all is freed
    std::shared_ptr<void> doomed = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    doomed.reset();  // the free itself, with no lock of ours held
    lock.lock();
    --pending_;
    ++freed_;
    if (pending_ == 0) idle_.notify_all();
  }
}

}  // namespace bloomgate
