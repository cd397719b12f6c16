#include "server/net/io_context_pool.h"

#include "filters/block_words.h"

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
    // A filter array made on a loop (an inline creation, a layer grown by an
    // add, a RESTORE) is faulted in by the adds that follow, on the loop: on
    // 4 KiB pages that is ~22 us a first touch here, on 2 MiB pages 77 ms
    // (BF.MADD of 1000 items into a fresh 1.2 GB filter stalled the loop
    // 37.8 s). Big filters made off the loop keep their huge pages
    // (keyspace/filter_maker.cc populates them there).
    threads_.emplace_back([&context] {
      internal::SmallPagesScope small_pages;
      context->run();
    });
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
