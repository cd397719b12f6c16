#include "filters/blocked_bloom.h"

#include <new>
#include <type_traits>

#include "filters/limits.h"

namespace bloomgate {
namespace {

// The array is addressed as whole 64-bit words laid out like plain uint64_t,
// which is what snapshots read and what the alignment maths assumes.
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t));
static_assert(std::is_trivially_destructible_v<std::atomic<uint64_t>>);

constexpr std::align_val_t kBlockAlignment{BlockedBloom::kBlockBytes};

}  // namespace

uint64_t BlockedBloom::BytesFor(const BloomShape& shape) {
  // Round up to whole blocks without computing bits + 511 (could wrap).
  const uint64_t blocks = shape.bits / kBlockBits + (shape.bits % kBlockBits != 0 ? 1 : 0);
  return blocks * kBlockBytes;  // blocks < 2^55, so < 2^61 bytes
}

std::unique_ptr<BlockedBloom> BlockedBloom::Create(const BloomShape& shape) {
  if (shape.bits == 0 || shape.probes < 1 || shape.probes > kMaxBloomProbes) return nullptr;
  const uint64_t bytes = BytesFor(shape);
  if (bytes > PTRDIFF_MAX) return nullptr;
  void* raw = ::operator new(static_cast<size_t>(bytes), kBlockAlignment, std::nothrow);
  if (raw == nullptr) return nullptr;
  const uint64_t num_blocks = bytes / kBlockBytes;
  const uint64_t num_words = num_blocks * kWordsPerBlock;
  auto* words = static_cast<std::atomic<uint64_t>*>(raw);
  // Start each word's lifetime, zeroed (the compiler turns this into memset).
  for (uint64_t i = 0; i < num_words; ++i) new (&words[i]) std::atomic<uint64_t>(0);
  auto* filter = new (std::nothrow) BlockedBloom(words, num_blocks, shape.probes);
  if (filter == nullptr) {
    ::operator delete(raw, kBlockAlignment);
    return nullptr;
  }
  return std::unique_ptr<BlockedBloom>(filter);
}

BlockedBloom::BlockedBloom(std::atomic<uint64_t>* words, uint64_t num_blocks, uint32_t probes)
    : words_(words), num_blocks_(num_blocks), probes_(probes) {}

BlockedBloom::~BlockedBloom() {
  // std::atomic<uint64_t> is trivially destructible: just free the array.
  ::operator delete(static_cast<void*>(words_), kBlockAlignment);
}

}  // namespace bloomgate
