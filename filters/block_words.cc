#include "filters/block_words.h"

#include <sys/mman.h>

#include <new>

namespace bloomgate::internal {
namespace {

// Starts each word's lifetime, zeroed (the compiler turns this into memset).
// On a fresh mapping the kernel's pages already read as zero; writing them
// is what makes the array resident now, on huge pages where advised.
std::atomic<uint64_t>* StartWords(void* raw, uint64_t bytes) {
  auto* words = static_cast<std::atomic<uint64_t>*>(raw);
  for (uint64_t i = 0; i < bytes / sizeof(uint64_t); ++i) new (&words[i]) std::atomic<uint64_t>(0);
  return words;
}

constexpr uint64_t kSmallPageBytes = 4096;

uint64_t MappedBytes(uint64_t bytes) {
  return (bytes + kSmallPageBytes - 1) / kSmallPageBytes * kSmallPageBytes;
}

// A mapping of MappedBytes(bytes) starting on a 2 MiB boundary: map 2 MiB
// more than needed, then unmap the unaligned head and the tail. nullptr if
// the kernel refuses.
void* MapAligned(uint64_t bytes) {
  const uint64_t length = MappedBytes(bytes);
  const uint64_t padded = length + kHugePageBytes;
  void* raw = mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + padded;
  if (end > aligned + length) munmap(reinterpret_cast<void*>(aligned + length), end - aligned - length);
  void* array = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  // Before the first write, so the first touch of each 2 MiB range faults in
  // a huge page. A failure (THP compiled out, "never") only means 4 KiB pages.
  (void)madvise(array, length, MADV_HUGEPAGE);
#endif
  return array;
}

}  // namespace

std::atomic<uint64_t>* NewZeroedBlockWords(uint64_t bytes) {
  if (bytes > PTRDIFF_MAX) return nullptr;
  if (bytes >= kHugePageArrayBytes) {
    void* array = MapAligned(bytes);
    return array == nullptr ? nullptr : StartWords(array, bytes);
  }
  void* raw = ::operator new(static_cast<size_t>(bytes), kBlockWordsAlignment, std::nothrow);
  return raw == nullptr ? nullptr : StartWords(raw, bytes);
}

void DeleteBlockWords(std::atomic<uint64_t>* words, uint64_t bytes) {
  if (words == nullptr) return;
  // std::atomic<uint64_t> is trivially destructible: just free the array.
  if (bytes >= kHugePageArrayBytes) {
    munmap(static_cast<void*>(words), MappedBytes(bytes));
    return;
  }
  ::operator delete(static_cast<void*>(words), kBlockWordsAlignment);
}

}  // namespace bloomgate::internal
