// The word array under BlockedBloom and BlockedCountingBloom: 64-bit atomic
// words, 64-byte aligned so that each 64-byte block is one cache line,
// zeroed when allocated.
//
// Two ways to get them, told apart by a tag just before the words:
//  - under kMappedBlockWordsBytes: the heap (operator new, 64-byte aligned),
//    every word written here;
//  - from kMappedBlockWordsBytes on: fresh anonymous pages from mmap, which
//    the kernel hands out zeroed as each is first touched, so creating a big
//    array costs a system call instead of writing every page up front. A
//    windowed filter's turnover creates a whole generation on the adding
//    thread: 20 MB of a 100 MB filter in 5, ~40 ms to fault in and zero
//    before (bench/results/window-turnover-2026-12-01.md), 22-54 us now. The
//    memory budget still counts the array whole from its creation, so it
//    stays an upper bound on what the process holds.
#pragma once

#include <sys/mman.h>

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

namespace block_words_detail {

// What lies just before the words: how they were allocated and how much.
struct Tag {
  uint64_t mapped_bytes;  // 0: operator new; else the whole mapping's length
  uint64_t base;          // the address to free (the allocation's start)
};
inline constexpr uint64_t kHeapPrefix = 64;    // keeps the words 64-byte aligned
inline constexpr uint64_t kMappedPrefix = 4096;  // one page: the words start a page

inline Tag* TagOf(std::atomic<uint64_t>* words) {
  return reinterpret_cast<Tag*>(reinterpret_cast<char*>(words) - sizeof(Tag));
}

}  // namespace block_words_detail

// `bytes` (a multiple of 8) of zeroed words, or nullptr if that is more than
// an allocation may ask for (PTRDIFF_MAX) or the allocation fails. Never
// throws. Free with DeleteBlockWords.
inline std::atomic<uint64_t>* NewZeroedBlockWords(uint64_t bytes) {
  using namespace block_words_detail;
  if (bytes > PTRDIFF_MAX - kMappedPrefix) return nullptr;
  if (bytes >= kMappedBlockWordsBytes) {
    const uint64_t length = bytes + kMappedPrefix;
    void* raw = ::mmap(nullptr, static_cast<size_t>(length), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    // Zero pages are zero words: an atomic<uint64_t> of 0 is its bytes.
    auto* words = reinterpret_cast<std::atomic<uint64_t>*>(static_cast<char*>(raw) + kMappedPrefix);
    *TagOf(words) = Tag{length, reinterpret_cast<uint64_t>(raw)};
    return words;
  }
  void* raw = ::operator new(static_cast<size_t>(bytes + kHeapPrefix), kBlockWordsAlignment,
                             std::nothrow);
  if (raw == nullptr) return nullptr;
  auto* words = reinterpret_cast<std::atomic<uint64_t>*>(static_cast<char*>(raw) + kHeapPrefix);
  *TagOf(words) = Tag{0, reinterpret_cast<uint64_t>(raw)};
  // Start each word's lifetime, zeroed (the compiler turns this into memset).
  for (uint64_t i = 0; i < bytes / sizeof(uint64_t); ++i) new (&words[i]) std::atomic<uint64_t>(0);
  return words;
}

inline void DeleteBlockWords(std::atomic<uint64_t>* words) {
  using namespace block_words_detail;
  if (words == nullptr) return;
  const Tag tag = *TagOf(words);
  void* base = reinterpret_cast<void*>(tag.base);
  if (tag.mapped_bytes != 0) {
    ::munmap(base, static_cast<size_t>(tag.mapped_bytes));
    return;
  }
  // std::atomic<uint64_t> is trivially destructible: just free the array.
  ::operator delete(base, kBlockWordsAlignment);
}

}  // namespace bloomgate::internal
