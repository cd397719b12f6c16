// The word array under BlockedBloom, ClassicBloom and BlockedCountingBloom:
// 64-bit atomic words, 64-byte aligned so that each 64-byte block is one
// cache line, zeroed when allocated.
//
// Three sizes, three sources (block_words.cc):
//  - under kMappedBlockWordsBytes: the heap (operator new, 64-byte aligned),
//    every word written here;
//  - from kMappedBlockWordsBytes on: fresh anonymous pages from mmap, which
//    the kernel hands out zeroed as each is first touched, so creating a big
//    array costs a system call instead of writing every page up front. A
//    windowed filter's turnover creates a whole generation on the adding
//    thread: 20 MB of a 100 MB filter in 5, ~40 ms to fault in and zero
//    before (bench/results/window-turnover-2026-12-01.md), 22-54 us now. The
//    memory budget still counts the array whole from its creation, so it
//    stays an upper bound on what the process holds;
//  - from kHugePageArrayBytes on: the same, but the mapping starts on a
//    2 MiB boundary and is advised MADV_HUGEPAGE before its first touch (see
//    kHugePageArrayBytes).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

namespace bloomgate::internal {

// The array is addressed as whole 64-bit words laid out like plain uint64_t,
// which is what snapshots read and what the alignment maths assumes.
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t));
static_assert(std::is_trivially_destructible_v<std::atomic<uint64_t>>);

inline constexpr std::align_val_t kBlockWordsAlignment{64};  // one cache line
// 1 MiB: below it, the heap's reuse of freed chunks beats a system call per
// array; above it, glibc mmaps the chunk anyway but then writes every page.
inline constexpr uint64_t kMappedBlockWordsBytes = uint64_t{1} << 20;

// x86-64's transparent huge page.
inline constexpr uint64_t kHugePageBytes = uint64_t{2} << 20;

// Arrays of at least this many bytes get a mapping aligned to 2 MiB and
// advised MADV_HUGEPAGE before the first touch, so the kernel backs them
// with 2 MiB pages where transparent huge pages are "always" or "madvise"
// (and falls back to 4 KiB pages silently where they are "never" or none are
// free). Why: a random line of a big filter also misses the TLB, and on
// 4 KiB pages under KVM that is a two-dimensional page walk: a 4 GiB
// filter's lookup cost 1.30-1.35x a dependent DRAM miss on 4 KiB pages and
// 1.00-1.03x on 2 MiB ones (bench/results/memory-2026-12-01.md). 8 MiB is
// where 4 KiB pages run out of reach of a
// 1536-2048-entry L2 TLB (6-8 MiB on current x86-64 cores). The mapping's
// length is the array's rounded up to 4 KiB, so no partial huge page is made
// resident past the array.
inline constexpr uint64_t kHugePageArrayBytes = uint64_t{8} << 20;

// `bytes` (a multiple of 8) of zeroed words, or nullptr if that is more than
// an allocation may ask for (PTRDIFF_MAX) or the allocation fails. Never
// throws. Free with DeleteBlockWords and the same `bytes`.
std::atomic<uint64_t>* NewZeroedBlockWords(uint64_t bytes);

void DeleteBlockWords(std::atomic<uint64_t>* words, uint64_t bytes);

// While one lives on a thread, the mapped arrays that thread creates are
// made resident at once (MADV_POPULATE_WRITE, Linux 5.14+; else one write
// per 4 KiB page) instead of page by page under their first adds. The
// generation preparer (filters/generation_preparer.h) and the server's
// filter maker use it: there the faults, and THP compaction inside them,
// cost no client anything (a 1 GB Bloom filter: ~500 huge pages at ~77 ms
// each on a loaded 2-core VM, which its first adds on an event loop paid).
class PopulateFreshArraysScope {
 public:
  PopulateFreshArraysScope();
  ~PopulateFreshArraysScope();
  PopulateFreshArraysScope(const PopulateFreshArraysScope&) = delete;
  PopulateFreshArraysScope& operator=(const PopulateFreshArraysScope&) = delete;

 private:
  bool was_;
};

// While one lives on a thread, the mapped arrays that thread creates are not
// advised MADV_HUGEPAGE: their first touches fault in zeroed 4 KiB pages
// (about a microsecond each) and never a 2 MiB page, which the kernel may
// first have to compact memory for. A windowed filter's turnover uses it
// when its prepared spare is late and it must build the generation on the
// adding thread: with huge pages, the adds that first touched such a
// generation took 0.1-1.04 s at load average 12 (direct compaction inside
// the faults), against 0.4-0.7 ms with the spare ready
// (bench/results/window-turnover-2026-12-01.md). That generation keeps its
// small pages, and so its TLB misses, until it ages out. The server's event
// loop threads run under one for their whole life, for the same reason:
// what they create (an inline creation, a grown layer, a RESTORE) keeps
// 4 KiB pages.
class SmallPagesScope {
 public:
  SmallPagesScope();
  ~SmallPagesScope();
  SmallPagesScope(const SmallPagesScope&) = delete;
  SmallPagesScope& operator=(const SmallPagesScope&) = delete;

 private:
  bool was_;
};

}  // namespace bloomgate::internal
