// Where filters hand big objects they drop while serving, to be freed off
// the thread that drops them: a windowed filter's aged-out generations at a
// turnover (filters/window_generations.h). Freeing a generation is munmap of
// its touched pages, ~80 us per MB (server/keyspace/lazy_freer.h): 1.6 ms for
// one generation of a 100 MB filter in 5, all of it on an event loop. The
// server installs its LazyFreer here at start-up; with none installed (the
// filter library's own tests, offline tools) an object is freed at once.
#pragma once

#include <cstdint>
#include <memory>

namespace bloomgate {

class DeferredFreer {
 public:
  virtual ~DeferredFreer() = default;
  // Takes a reference to free elsewhere; the object is freed there if that
  // was the last one.
  virtual void Free(std::shared_ptr<void> doomed) = 0;
};

// Objects below this are freed at once: handing over costs about as much
// (LazyFreer::kLazyFreeBytes, the same 1 MiB).
inline constexpr uint64_t kDeferredFreeBytes = uint64_t{1} << 20;

// Installs `freer` (nullptr: none). Not while filters drop objects on other
// threads (start-up and shutdown only).
void SetDeferredFreer(DeferredFreer* freer);
// Uninstalls `freer` if it is the one installed.
void ClearDeferredFreer(DeferredFreer* freer);
// Hands `doomed` (of about `bytes`) to the installed freer when it is big
// enough and one is installed; else drops it here.
void FreeDeferred(std::shared_ptr<void> doomed, uint64_t bytes);

}  // namespace bloomgate
