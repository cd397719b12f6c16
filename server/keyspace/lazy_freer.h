// Frees big filters off the threads that hold key locks, as Redis's
// lazyfree (UNLINK, FLUSHALL ASYNC) frees big values on a background thread.
// Freeing inline costs DEL of an 825 MB filter 66 ms inside the command, all
// of it with the key's lock held and its event loop stopped. Every free of a
// filter of kLazyFreeBytes or more that the keyspace makes (DEL, UNLINK,
// FLUSHALL/FLUSHDB, a RENAME over a key, a replaced key at load or replay,
// expiry) hands the last reference here instead; the DEL itself costs a
// queue push. The filter keeps its bytes charged to the memory budget until
// it is really gone (its destructor gives them back), so used_memory and
// maxmemory stay honest meanwhile; INFO memory shows what waits as Redis's
// lazyfree_pending_objects.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace bloomgate {

class LazyFreer {
 public:
  // At ~80 us per MB freed (66 ms for 825 MB, munmap of touched pages), a
  // filter under 1 MiB is freed inline in under 0.1 ms, about what handing
  // it over and waking the thread costs; above that, the thread frees it.
  static constexpr uint64_t kLazyFreeBytes = uint64_t{1} << 20;

  LazyFreer();
  ~LazyFreer();
  LazyFreer(const LazyFreer&) = delete;
  LazyFreer& operator=(const LazyFreer&) = delete;

  // Takes a reference to free on the thread (the object is freed there if
  // that was the last one). After Stop, drops it on the caller's thread.
  void Free(std::shared_ptr<void> doomed);
  // Objects handed over and not freed yet (INFO lazyfree_pending_objects).
  uint64_t pending() const;
  // Objects freed by the thread since start-up (INFO lazyfreed_objects).
  uint64_t freed() const;
  // Returns once everything handed over so far is freed (tests; FLUSHALL's
  // reply does not wait, as Redis's FLUSHALL ASYNC does not).
  void WaitIdle();
  // Frees what is queued and stops the thread.
  void Stop();

 private:
  void Run();

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;  // pending_ fell to 0
  std::deque<std::shared_ptr<void>> queue_;  // guarded by mutex_
  uint64_t pending_ = 0;                     // guarded by mutex_: queued + being freed
  uint64_t freed_ = 0;                       // guarded by mutex_
  bool stopping_ = false;                    // guarded by mutex_
  std::thread thread_;
};

}  // namespace bloomgate
