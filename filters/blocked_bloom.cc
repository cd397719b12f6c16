#include "filters/blocked_bloom.h"

#include <new>

#include "filters/block_words.h"
#include "filters/limits.h"

namespace bloomgate {

static_assert(BlockedBloom::kBlockBytes == 64, "a block is one line of block_words.h");

uint64_t BlockedBloom::BytesFor(const BloomShape& shape) {
  // Round up to whole blocks without computing bits + 511 (could wrap).
  const uint64_t blocks = shape.bits / kBlockBits + (shape.bits % kBlockBits != 0 ? 1 : 0);
  return blocks * kBlockBytes;  // blocks < 2^55, so < 2^61 bytes
}

std::unique_ptr<BlockedBloom> BlockedBloom::Create(const BloomShape& shape) {
  if (shape.bits == 0 || shape.probes < 1 || shape.probes > kMaxBloomProbes) return nullptr;
  const uint64_t bytes = BytesFor(shape);
  std::atomic<uint64_t>* words = internal::NewZeroedBlockWords(bytes);
  if (words == nullptr) return nullptr;
  auto* filter = new (std::nothrow)
      BlockedBloom(words, bytes / kBlockBytes, shape.probes, /*owns_words=*/true);
  if (filter == nullptr) {
    internal::DeleteBlockWords(words, bytes);
    return nullptr;
  }
  return std::unique_ptr<BlockedBloom>(filter);
}

BlockedBloom::BlockedBloom(std::atomic<uint64_t>* words, uint64_t num_blocks, uint32_t probes,
                           bool owns_words)
    : words_(words), num_blocks_(num_blocks), probes_(probes), owns_words_(owns_words) {}

BlockedBloom::~BlockedBloom() {
  if (owns_words_) internal::DeleteBlockWords(words_, bytes());
}

static_assert(sizeof(BlockedBloom) == 24);

}  // namespace bloomgate
