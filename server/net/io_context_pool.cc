#include "server/net/io_context_pool.h"

namespace bloomgate {

IoContextPool::IoContextPool(size_t size) {
  for (size_t i = 0; i < size; ++i) {
    // Concurrency hint 1: each context is run by exactly one thread, which
    // lets Asio drop its internal locking.
    contexts_.push_back(std::make_unique<asio::io_context>(1));
    work_.push_back(asio::make_work_guard(*contexts_.back()));
  }
}

size_t IoContextPool::NextIndex() {
  size_t index = next_;
  next_ = (next_ + 1) % contexts_.size();
  return index;
}

void IoContextPool::Start() {
  for (auto& context : contexts_) {
    threads_.emplace_back([&context] { context->run(); });
  }
}

void IoContextPool::ReleaseWork() {
  for (auto& guard : work_) guard.reset();
}

void IoContextPool::ForceStop() {
  for (auto& context : contexts_) context->stop();
}

void IoContextPool::Join() {
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

}  // namespace bloomgate
