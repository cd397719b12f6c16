#include "filters/block_words.h"

#include <sys/mman.h>

#include <new>

namespace bloomgate::internal {
namespace {

constexpr uint64_t kSmallPageBytes = 4096;

// Debian 12's libc headers may predate it; the number is the kernel's
// (include/uapi/asm-generic/mman-common.h, Linux 5.14).
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

thread_local bool populate_fresh_arrays = false;  // see PopulateFreshArraysScope
thread_local bool small_pages_only = false;       // see SmallPagesScope

// Makes the fresh mapping [array, array + length) resident, written, so no
// later access faults. The kernel's populate takes huge pages where the
// mapping was advised for them; an older kernel (EINVAL) gets one write per
// small page, which faults in the same pages one by one.
void Populate(void* array, uint64_t length) {
  if (madvise(array, length, MADV_POPULATE_WRITE) == 0) return;
  auto* words = static_cast<std::atomic<uint64_t>*>(array);
  // Relaxed: nobody else can see the array yet (it is not published).
  for (uint64_t off = 0; off < length; off += kSmallPageBytes) {
    words[off / sizeof(uint64_t)].store(0, std::memory_order_relaxed);
  }
}

uint64_t MappedBytes(uint64_t bytes) {
  return (bytes + kSmallPageBytes - 1) / kSmallPageBytes * kSmallPageBytes;
}

// A fresh anonymous mapping of MappedBytes(bytes); for a huge-page array it
// starts on a 2 MiB boundary (map 2 MiB more than needed, then unmap the
// unaligned head and the tail) and is advised MADV_HUGEPAGE. nullptr if the
// kernel refuses. Its pages read as zero, and zero pages are zero words (an
// atomic<uint64_t> of 0 is its bytes), so nothing is written: each page is
// faulted in, zeroed by the kernel, by the first add that reaches it.
void* MapZeroed(uint64_t bytes) {
  const uint64_t length = MappedBytes(bytes);
  if (bytes < kHugePageArrayBytes || small_pages_only) {
    void* raw = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    if (populate_fresh_arrays) Populate(raw, length);
    return raw;
  }
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
  // Before the first touch, so the first touch of each 2 MiB range faults in
  // a huge page. A failure (THP compiled out, "never") only means 4 KiB pages.
  (void)madvise(array, length, MADV_HUGEPAGE);
#endif
  if (populate_fresh_arrays) Populate(array, length);
  return array;
}

}  // namespace

PopulateFreshArraysScope::PopulateFreshArraysScope() : was_(populate_fresh_arrays) {
  populate_fresh_arrays = true;
}
PopulateFreshArraysScope::~PopulateFreshArraysScope() { populate_fresh_arrays = was_; }

SmallPagesScope::SmallPagesScope() : was_(small_pages_only) { small_pages_only = true; }
SmallPagesScope::~SmallPagesScope() { small_pages_only = was_; }

std::atomic<uint64_t>* NewZeroedBlockWords(uint64_t bytes) {
  if (bytes > PTRDIFF_MAX - kHugePageBytes) return nullptr;
  if (bytes >= kMappedBlockWordsBytes) return static_cast<std::atomic<uint64_t>*>(MapZeroed(bytes));
  void* raw = ::operator new(static_cast<size_t>(bytes), kBlockWordsAlignment, std::nothrow);
  if (raw == nullptr) return nullptr;
  auto* words = static_cast<std::atomic<uint64_t>*>(raw);
  // Start each word's lifetime, zeroed (the compiler turns this into memset).
  for (uint64_t i = 0; i < bytes / sizeof(uint64_t); ++i) new (&words[i]) std::atomic<uint64_t>(0);
  return words;
}

void DeleteBlockWords(std::atomic<uint64_t>* words, uint64_t bytes) {
  if (words == nullptr) return;
  if (bytes >= kMappedBlockWordsBytes) {
    munmap(static_cast<void*>(words), MappedBytes(bytes));
    return;
  }
  // std::atomic<uint64_t> is trivially destructible: just free the array.
  ::operator delete(static_cast<void*>(words), kBlockWordsAlignment);
}

}  // namespace bloomgate::internal
