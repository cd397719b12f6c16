// The word array under BlockedBloom, ClassicBloom and BlockedCountingBloom:
// 64-bit atomic words, 64-byte aligned so that each 64-byte block is one
// cache line, zeroed when allocated. Big arrays get 2 MiB pages.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace bloomgate::internal {

// The array is addressed as whole 64-bit words laid out like plain uint64_t,
// which is what snapshots read and what the alignment maths assumes.
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t));
static_assert(std::is_trivially_destructible_v<std::atomic<uint64_t>>);

inline constexpr std::align_val_t kBlockWordsAlignment{64};  // one cache line

// x86-64's transparent huge page.
inline constexpr uint64_t kHugePageBytes = uint64_t{2} << 20;

// Arrays of at least this many bytes get their own mapping, aligned to
// 2 MiB and advised MADV_HUGEPAGE before the first write, so the kernel backs
// them with 2 MiB pages where transparent huge pages are "always" or
// "madvise" (and falls back to 4 KiB pages silently where they are "never"
// or none are free). Why: a random line of a big filter also misses the TLB,
// and on 4 KiB pages under KVM that is a two-dimensional page walk: a 4 GiB
// filter's lookup cost 1.30-1.35x a dependent DRAM miss on 4 KiB pages and
// 1.00-1.03x on 2 MiB ones (bench/README.md, issue 5 target 3a). 8 MiB is
// where 4 KiB pages run out of reach of a 1536-2048-entry L2 TLB (6-8 MiB on
// current x86-64 cores), and the mapping's length is the array's rounded up to 4 KiB, so no
// partial huge page is ever made resident past the array: the bytes a budget
// counts stay the bytes the process holds (to within 4 KiB).
inline constexpr uint64_t kHugePageArrayBytes = uint64_t{8} << 20;

// `bytes` (a multiple of 8) of zeroed words, or nullptr if that is more than
// an allocation may ask for (PTRDIFF_MAX) or the allocation fails. Every word
// is written here, so the memory is resident from the start (what a budget
// counts is what the process holds). Never throws. Free with
// DeleteBlockWords and the same `bytes`.
std::atomic<uint64_t>* NewZeroedBlockWords(uint64_t bytes);

void DeleteBlockWords(std::atomic<uint64_t>* words, uint64_t bytes);

}  // namespace bloomgate::internal
