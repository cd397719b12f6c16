#include "counting_new.h"

#include <cstdlib>
#include <new>

namespace {
thread_local bloomgate::testing::Allocations on_this_thread;
thread_local uint64_t recent_sizes[bloomgate::testing::kRecentAllocations];

void* Counted(size_t size, size_t alignment) {
  recent_sizes[on_this_thread.count % bloomgate::testing::kRecentAllocations] = size;
  ++on_this_thread.count;
  on_this_thread.bytes += size;
  if (size == 0) size = 1;
  void* p = alignment <= alignof(std::max_align_t)
                ? std::malloc(size)
                : std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

bloomgate::testing::Allocations bloomgate::testing::AllocationsOnThisThread() {
  return on_this_thread;
}

uint64_t bloomgate::testing::AllocationSize(uint64_t index) {
  if (index >= on_this_thread.count || on_this_thread.count - index > kRecentAllocations) return 0;
  return recent_sizes[index % kRecentAllocations];
}

#if BLOOMGATE_COUNTING_NEW
#if defined(__GNUC__) && !defined(__clang__)
// g++ 12 sees free() on what this operator new returned and calls it a
// mismatch; here the pair is malloc/free on purpose.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
// libstdc++'s nothrow forms call these, so they are counted too.
void* operator new(size_t size) { return Counted(size, 0); }
void* operator new(size_t size, std::align_val_t alignment) {
  return Counted(size, static_cast<size_t>(alignment));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
#endif
