// What this thread has allocated through operator new (every form: plain,
// aligned, nothrow), for the tests of this binary, which replaces the global
// operator new to count. The counts are per thread, so the server's
// background threads do not disturb them.
#pragma once

#include <cstdint>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define BLOOMGATE_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(BLOOMGATE_SANITIZED)
#define BLOOMGATE_COUNTING_NEW 0  // the sanitizers bring their own operator new
#else
#define BLOOMGATE_COUNTING_NEW 1
#endif

namespace bloomgate::testing {

struct Allocations {
  uint64_t count = 0;  // calls
  uint64_t bytes = 0;  // bytes asked for (not what malloc rounds them to)
};

// Totals since the thread started; take differences.
Allocations AllocationsOnThisThread();
// The size asked for by this thread's allocation number `index` (counting
// from 0, as AllocationsOnThisThread().count does), while it is one of the
// last kRecentAllocations; else 0.
constexpr uint64_t kRecentAllocations = 64;
uint64_t AllocationSize(uint64_t index);

}  // namespace bloomgate::testing
