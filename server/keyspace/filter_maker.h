// Builds big filters off the event loops. TOPK.RESERVE k 100000000 allocated
// and zeroed 4,000,002,737 bytes on its connection's loop: 6-9 s on an idle
// machine (48 s on a loaded one) during which every other connection of that
// loop waited; CF.RESERVE c 1073741824 stalled it for 0.9 s (14.6 s loaded).
//
// Now a creation of kInlineBytes or more parks only its own connection, as a
// write waiting for a snapshot copy does (CommandOutcome::kParked; the command
// is left unread): its first run checks what it can and asks for a MadeFilter
// (CommandContext::MakeFilter), the connection hands that to this thread,
// which allocates and touches the filter with no lock of the keyspace held,
// and once it is made the connection runs the same command again. The second
// run finds the filter made and publishes it under the key's lock, as an
// inline creation would: a key created meanwhile wins (the made filter is
// dropped, freed by the lazy freer), and the creation record is journaled
// then, with the filter's own parameters.
//
// The filter is charged to the memory budget when its build starts, as an
// inline one is (Create reserves before it allocates), so maxmemory sees
// a build in progress and two huge builds cannot both fit by racing.
//
// The server starts one FilterMaker and installs it; with none installed
// (unit tests of the filters, the start-up replay, offline tools) every
// filter is built inline. One thread, as the snapshot copier: building is
// bound by page faults and memory bandwidth, which a second would share.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "filters/generation_preparer.h"

namespace bloomgate {

struct CommandSpec;

// One filter to build off the loop and, once built, what came of it. The
// asking connection holds it (ClientState::making) from the first run of
// its command to the second.
class MadeFilter {
 public:
  explicit MadeFilter(const CommandSpec* spec) : spec_(spec) {}
  virtual ~MadeFilter() = default;
  MadeFilter(const MadeFilter&) = delete;
  MadeFilter& operator=(const MadeFilter&) = delete;

  // Builds the filter (on the maker's thread, or inline); once only.
  void Make() {
    if (made_) return;
    Build();
    made_ = true;
  }
  bool made() const { return made_; }
  // The command that asked: only its second run takes the filter.
  const CommandSpec* spec() const { return spec_; }

 protected:
  virtual void Build() = 0;

 private:
  const CommandSpec* const spec_;
  // Written by the maker's thread before it posts the connection's resume,
  // read on the connection's loop after it: the post orders the two.
  bool made_ = false;
};

class FilterMaker {
 public:
  // Filters smaller than this are built inline: at ~0.3 ms per MiB zeroed
  // (page faults included) 1 MiB costs less than parking the connection and
  // waking it again, and far below what a loop pass may take; the same
  // threshold as SnapshotCopier::kInlineCopyBytes and LazyFreer's.
  static constexpr uint64_t kInlineBytes = uint64_t{1} << 20;

  FilterMaker() = default;
  ~FilterMaker() { Stop(); }
  FilterMaker(const FilterMaker&) = delete;
  FilterMaker& operator=(const FilterMaker&) = delete;

  // Builds `made` on the thread, then calls `done` there. False (nothing
  // run) once stopped.
  bool Make(std::shared_ptr<MadeFilter> made, std::function<void()> done);
  // Uninstalls this maker, drops the builds not started (their connections
  // are going away with the server) and joins the one in progress.
  void Stop();
  // Filters built on the thread since start-up (INFO, tests).
  uint64_t made() const { return made_.load(std::memory_order_relaxed); }

 private:
  // A job queue on one thread: the generation preparer's, a second instance.
  GenerationPreparer jobs_;
  std::atomic<uint64_t> made_{0};  // a statistic: relaxed
};

// Installs `maker` (nullptr: none). Start-up and shutdown only.
void SetFilterMaker(FilterMaker* maker);
// The installed maker, or null: build inline.
FilterMaker* CurrentFilterMaker();

}  // namespace bloomgate
