// The word array under BlockedBloom and BlockedCountingBloom: 64-bit atomic
// words, 64-byte aligned so that each 64-byte block is one cache line,
// zeroed when allocated.
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

// `bytes` (a multiple of 8) of zeroed words, or nullptr if that is more than
// an allocation may ask for (PTRDIFF_MAX) or the allocation fails. Every word
// is written here, so the memory is resident from the start (what a budget
// counts is what the process holds). Never throws. Free with
// DeleteBlockWords.
inline std::atomic<uint64_t>* NewZeroedBlockWords(uint64_t bytes) {
  if (bytes > PTRDIFF_MAX) return nullptr;
  void* raw = ::operator new(static_cast<size_t>(bytes), kBlockWordsAlignment, std::nothrow);
  if (raw == nullptr) return nullptr;
  auto* words = static_cast<std::atomic<uint64_t>*>(raw);
  // Start each word's lifetime, zeroed (the compiler turns this into memset).
  for (uint64_t i = 0; i < bytes / sizeof(uint64_t); ++i) new (&words[i]) std::atomic<uint64_t>(0);
  return words;
}

inline void DeleteBlockWords(std::atomic<uint64_t>* words) {
  // std::atomic<uint64_t> is trivially destructible: just free the array.
  ::operator delete(static_cast<void*>(words), kBlockWordsAlignment);
}

}  // namespace bloomgate::internal
