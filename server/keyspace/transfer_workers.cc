#include "server/keyspace/transfer_workers.h"

#include <algorithm>
#include <atomic>
#include <utility>

namespace bloomgate {
namespace {

// Acquire/release: the workers are fully built before a command may use them.
std::atomic<TransferWorkers*> installed_workers{nullptr};

}  // namespace

bool TransferDoneFor(const MadeFilter* made, const CommandSpec* spec) {
  return made != nullptr && made->spec() == spec && made->made() &&
         dynamic_cast<const TransferWork*>(made) != nullptr;
}

TransferWorkers::TransferWorkers() {
  threads_.reserve(kThreads);
  for (size_t i = 0; i < kThreads; ++i) threads_.emplace_back([this] { Loop(); });
}

TransferWorkers::~TransferWorkers() { Stop(); }

bool TransferWorkers::Run(std::shared_ptr<TransferWork> work, std::function<void()> done) {
  auto job = std::make_shared<Job>();
  // Weak: Stop may come after the job dropped its reference and the
  // connection its own.
  std::weak_ptr<TransferWork> running = work;
  job->run = [work = std::move(work), done = std::move(done)]() mutable {
    work->Make();
    // This thread's reference goes before the connection resumes, as the
    // filter maker's does: what the work holds (MIGRATE's key holds) is
    // released with the connection's reference, never after the server.
    work.reset();
    done();
  };
  job->cancel = [running] {
    if (auto work = running.lock()) work->Cancel();
  };
  std::lock_guard lock(mutex_);
  if (stopping_) return false;
  queue_.push_back(std::move(job));
  wake_.notify_one();
  return true;
}

void TransferWorkers::Stop() {
  TransferWorkers* expected = this;
  installed_workers.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  std::vector<std::shared_ptr<Job>> running;
  std::deque<std::shared_ptr<Job>> dropped;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    dropped.swap(queue_);
    running = running_;
  }
  wake_.notify_all();
  dropped.clear();  // work not started only drops what it holds, outside the lock
  for (const auto& job : running) job->cancel();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

void TransferWorkers::Loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    std::shared_ptr<Job> job = std::move(queue_.front());
    queue_.pop_front();
    running_.push_back(job);
    lock.unlock();
    job->run();
    job->run = nullptr;
    lock.lock();
    running_.erase(std::find(running_.begin(), running_.end(), job));
  }
}

void SetTransferWorkers(TransferWorkers* workers) {
  installed_workers.store(workers, std::memory_order_release);
}

TransferWorkers* CurrentTransferWorkers() { return installed_workers.load(std::memory_order_acquire); }

}  // namespace bloomgate
