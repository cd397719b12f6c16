// Where windowed filters have their next generation built ahead, off the
// thread that adds: the turnover then swaps in an array whose pages are
// already resident instead of faulting in 20 MB (one generation of a 100 MB
// filter in 5) under the first adds of the period. Before this, the worst
// BF.ADD after a boundary was 14.8-49 ms, nearly all of it page faults and
// THP compaction inside them (bench/results/window-turnover-2026-12-01.md).
//
// The server starts one GenerationPreparer (one thread) at start-up and
// installs it; with none installed (the filter library's own tests, offline
// tools) nothing is prepared and a turnover builds its generation inline, as
// before. A job owns everything it touches (a shared state and a copy of the
// filter's parameters), never the filter, so a filter may be deleted,
// renamed or copied while its job runs.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace bloomgate {

// Runs jobs on one thread, in order. Stop (or the destructor) drops the jobs
// not started and joins.
class GenerationPreparer {
 public:
  GenerationPreparer();
  virtual ~GenerationPreparer();
  GenerationPreparer(const GenerationPreparer&) = delete;
  GenerationPreparer& operator=(const GenerationPreparer&) = delete;

  // Queues `job`; false (job dropped) once stopped.
  virtual bool Submit(std::function<void()> job);
  // Uninstalls this preparer, drops the jobs not started and joins.
  void Stop();

 protected:
  // For tests: a preparer without a thread whose Submit the subclass defines.
  struct NoThread {};
  explicit GenerationPreparer(NoThread) {}

 private:
  void Run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;  // guarded by mutex_
  bool stopping_ = false;                    // guarded by mutex_
  std::thread thread_;
};

// Installs `preparer` (nullptr: none). Start-up and shutdown only.
void SetGenerationPreparer(GenerationPreparer* preparer);
// Uninstalls `preparer` if it is the one installed.
void ClearGenerationPreparer(GenerationPreparer* preparer);
// Hands `job` to the installed preparer; false if none is installed (or it
// stopped), and the job is dropped unrun.
bool PrepareAhead(std::function<void()> job);

}  // namespace bloomgate
