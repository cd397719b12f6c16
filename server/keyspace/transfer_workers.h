// A few threads of their own for work that waits on the network, not on
// memory: MIGRATE's transfer. On the filter maker's one thread a MIGRATE to
// a stopped target held every big filter build queued behind it for the
// whole timeout (each read and write may wait that long); here it holds one
// of kThreads, and builds go on.
//
// Stop drops the work not started and asks the running work to end early
// (TransferWork::Cancel: MIGRATE shuts its socket down, so a read waiting on
// a dead target returns at once) before it joins, so shutdown does not wait
// out a MIGRATE's timeout.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "server/keyspace/filter_maker.h"

namespace bloomgate {

// Off-loop work of a command that waits on the network and has taken effect
// when it ends (MIGRATE: the keys are on the target and gone here).
// FilterMaker::Make hands it to the installed TransferWorkers, and the
// command's second run only replies: it is not routed again, since a slot
// settled meanwhile must not turn a finished move into -MOVED.
class TransferWork : public MadeFilter {
 public:
  using MadeFilter::MadeFilter;
  // Asks a Build in progress to end early (shutdown); safe from any thread,
  // beside Build.
  virtual void Cancel() = 0;
};

// Whether `made` is TransferWork finished for `spec`'s second run.
bool TransferDoneFor(const MadeFilter* made, const CommandSpec* spec);

class TransferWorkers {
 public:
  // Four: resharding runs one MIGRATE at a time per source (redis-cli
  // --cluster), so four let a few stuck targets wait out their timeouts
  // while transfers to the others go on; an idle thread costs a stack and a
  // condition wait.
  static constexpr size_t kThreads = 4;

  TransferWorkers();
  ~TransferWorkers();
  TransferWorkers(const TransferWorkers&) = delete;
  TransferWorkers& operator=(const TransferWorkers&) = delete;

  // Runs `work` on a worker, then calls `done` there. False (nothing run)
  // once stopped.
  bool Run(std::shared_ptr<TransferWork> work, std::function<void()> done);
  // Uninstalls these workers, drops the work not started (its connections
  // are going away with the server), cancels what runs and joins.
  // Idempotent.
  void Stop();

 private:
  struct Job {
    std::function<void()> run;
    std::function<void()> cancel;
  };
  void Loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;     // guarded by mutex_
  std::vector<std::shared_ptr<Job>> running_;  // guarded by mutex_
  bool stopping_ = false;                      // guarded by mutex_
  std::vector<std::thread> threads_;
};

// Installs `workers` (nullptr: none; TransferWork then runs on the filter
// maker's thread). Start-up and shutdown only.
void SetTransferWorkers(TransferWorkers* workers);
TransferWorkers* CurrentTransferWorkers();

}  // namespace bloomgate
