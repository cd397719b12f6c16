#include "server/keyspace/filter_maker.h"

#include <utility>

#include "filters/block_words.h"
#include "server/keyspace/transfer_workers.h"

namespace bloomgate {
namespace {

// Acquire/release: the maker is fully built before a command may use it.
std::atomic<FilterMaker*> installed{nullptr};

}  // namespace

bool FilterMaker::Make(std::shared_ptr<MadeFilter> made, std::function<void()> done) {
  // Work that waits on the network goes to threads of its own: on this one
  // a MIGRATE to a stopped target held every big build behind it for the
  // whole timeout.
  if (auto work = std::dynamic_pointer_cast<TransferWork>(made)) {
    if (TransferWorkers* workers = CurrentTransferWorkers()) {
      return workers->Run(std::move(work), std::move(done));
    }
  }
  return jobs_.Submit([this, made = std::move(made), done = std::move(done)]() mutable {
    {
      // Fault the filter's big arrays in here, 2 MiB pages and all, rather
      // than under its first adds on the loop (internal::SmallPagesScope).
      internal::PopulateFreshArraysScope populate;
      made->Make();
    }
    // This thread's reference goes before the connection resumes, so what
    // the build holds (a merge's read holds on its sources, their entries)
    // is released with the connection's reference, never after: a job
    // closure freed late on this thread could outlive the server whose
    // keys and memory budget those are.
    made.reset();
    made_.fetch_add(1, std::memory_order_relaxed);
    done();
  });
}

void FilterMaker::Stop() {
  FilterMaker* expected = this;
  installed.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  jobs_.Stop();
}

void SetFilterMaker(FilterMaker* maker) { installed.store(maker, std::memory_order_release); }

FilterMaker* CurrentFilterMaker() { return installed.load(std::memory_order_acquire); }

}  // namespace bloomgate
