#include "filters/generation_preparer.h"

#include <atomic>
#include <utility>

namespace bloomgate {
namespace {

// Acquire/release: the preparer is fully built before a filter may call it.
std::atomic<GenerationPreparer*> installed{nullptr};

}  // namespace

GenerationPreparer::GenerationPreparer() { thread_ = std::thread([this] { Run(); }); }

GenerationPreparer::~GenerationPreparer() { Stop(); }

bool GenerationPreparer::Submit(std::function<void()> job) {
  std::lock_guard lock(mutex_);
  if (stopping_ || !thread_.joinable()) return false;
  queue_.push_back(std::move(job));
  wake_.notify_one();
  return true;
}

void GenerationPreparer::Stop() {
  ClearGenerationPreparer(this);
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    queue_.clear();  // a job not started only drops its shared state
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void GenerationPreparer::Run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    job();  // allocation and page faults, with no lock of ours held
    job = nullptr;
    lock.lock();
  }
}

void SetGenerationPreparer(GenerationPreparer* preparer) {
  installed.store(preparer, std::memory_order_release);
}

void ClearGenerationPreparer(GenerationPreparer* preparer) {
  GenerationPreparer* expected = preparer;
  installed.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
}

bool PrepareAhead(std::function<void()> job) {
  GenerationPreparer* preparer = installed.load(std::memory_order_acquire);
  return preparer != nullptr && preparer->Submit(std::move(job));
}

}  // namespace bloomgate
