#include "server/keyspace/snapshot_copier.h"

#include <utility>

#include "server/keyspace/entry_read_waiters.h"

namespace bloomgate {

SnapshotCopier::SnapshotCopier(MemoryBudget* budget) : budget_(budget) {
  thread_ = std::thread([this] { Run(); });
}

SnapshotCopier::~SnapshotCopier() { Stop(); }

bool SnapshotCopier::ShouldPark(const KeyEntry& entry) {
  return entry.snapshot_copy_owed() && !entry.snapshot_copy_refused() &&
         (entry.MemoryUsage() >= kInlineCopyBytes || entry.off_loop_read_held());
}

void SnapshotCopier::CopyInBackground(EntryPtr entry, std::function<void()> done) {
  {
    std::lock_guard lock(mutex_);
    ++requests_;
  }
  // Held by a read off the loop (MIGRATE's transfer, a merge's sources):
  // the writer waits in the entry's own list, not on this thread, which
  // would sit out the whole hold while other filters' copies queue behind.
  // Run again once the hold ends, it parks here if a copy is still owed.
  if (CallWhenReadsEnd(*entry, done)) return;
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      for (Request& request : queue_) {
        if (request.entry == entry) {
          request.done.push_back(std::move(done));
          return;
        }
      }
      queue_.push_back(Request{std::move(entry), {}});
      queue_.back().done.push_back(std::move(done));
      wake_.notify_one();
      return;
    }
  }
  (void)entry->TakeSnapshotCopy(budget_, /*final_attempt=*/false);
  done();
}

void SnapshotCopier::Stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

uint64_t SnapshotCopier::copies_made() const {
  std::lock_guard lock(mutex_);
  return copies_made_;
}

uint64_t SnapshotCopier::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

void SnapshotCopier::Run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued is done
    // The request stays queued while it is copied, so that writers arriving
    // meanwhile join it instead of queueing a second copy.
    EntryPtr entry = queue_.front().entry;
    lock.unlock();
    bool owed = entry->snapshot_copy_owed();
    bool ok = entry->TakeSnapshotCopy(budget_, /*final_attempt=*/false);
    lock.lock();
    if (owed && ok) ++copies_made_;
    std::vector<std::function<void()>> done = std::move(queue_.front().done);
    queue_.pop_front();
    lock.unlock();
    for (auto& callback : done) callback();
    done.clear();  // the callbacks' captures go before the lock is taken again
    entry.reset();
    lock.lock();
  }
}

}  // namespace bloomgate
