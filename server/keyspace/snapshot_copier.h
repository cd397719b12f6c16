// Makes the copies a snapshot owes itself (see KeyEntry::TakeSnapshotCopy)
// off the event loops: copied on its connection's event loop, the first write
// to a 614 MB counting filter after a BGSAVE would take 642 ms, during which
// every other connection of that loop waited too. So the dispatcher parks
// only the writer (its connection stops reading and
// running commands; CommandOutcome::kParked) and asks this thread for the
// copy; when it is made the connection resumes and runs the same command
// again. Other connections of the loop, readers of the filter and every
// other key go on meanwhile.
//
// One thread, started with the server: copies are memory-bound (~5 GB/s),
// so a second would mostly share the same memory bandwidth.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "filters/memory_budget.h"
#include "server/keyspace/keyspace.h"

namespace bloomgate {

class SnapshotCopier {
 public:
  // Copies smaller than this are made inline by the writer: at memcpy speed
  // 1 MiB is ~0.2 ms, less than parking a connection and waking it again
  // costs in latency to that client, and far below what a loop pass may take.
  static constexpr uint64_t kInlineCopyBytes = uint64_t{1} << 20;

  explicit SnapshotCopier(MemoryBudget* budget);
  ~SnapshotCopier();
  SnapshotCopier(const SnapshotCopier&) = delete;
  SnapshotCopier& operator=(const SnapshotCopier&) = delete;

  // Whether a writer reaching `entry` now should park for a background copy
  // rather than copy inline: a copy is owed, big, and its last attempt was
  // not refused by the budget (a refusal is retried inline, cheaply).
  static bool ShouldPark(const KeyEntry& entry);

  // Makes `entry`'s owed copy (charged to the budget) on the copier thread,
  // then calls `done` there, whether the copy was made, refused, or already
  // made by someone else. Requests for one entry share one copy.
  void CopyInBackground(EntryPtr entry, std::function<void()> done);

  // Finishes what is queued and stops the thread; later requests run inline
  // on the caller's thread. Called at shutdown, before the event loops go.
  void Stop();

  // Copies this thread made, and waits asked for (for tests and INFO).
  uint64_t copies_made() const;
  uint64_t requests() const;

 private:
  struct Request {
    EntryPtr entry;
    std::vector<std::function<void()>> done;
  };
  void Run();

  MemoryBudget* const budget_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Request> queue_;  // guarded by mutex_
  bool stopping_ = false;      // guarded by mutex_
  uint64_t copies_made_ = 0;   // guarded by mutex_
  uint64_t requests_ = 0;      // guarded by mutex_
  std::thread thread_;
};

}  // namespace bloomgate
