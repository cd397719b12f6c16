// One layer of a ScalableBloomFilter: our blocked layout (BlockedBloom), or
// a classic one (ClassicBloom): RedisBloom's, for filters imported from
// RedisBloom, or ours, for filters created at error rates where one block per
// item stops paying (bloom_math.h's ClassicBloomPays). A filter's layers are
// all of one kind -- the chain's block_cells says which (kBloomBlockBits,
// kRedisBloomWordBits or kClassicBloomGranuleBits) -- so the branches below
// always go the same way for a given filter.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "filters/blocked_bloom.h"
#include "filters/bloom_math.h"
#include "filters/redisbloom_layout.h"

namespace bloomgate {

class BloomLayer {
 public:
  // A zeroed layer for a chain shape: shape.block_cells picks the kind
  // (kRedisBloomWordBits: RedisBloom's classic, kClassicBloomGranuleBits:
  // ours, both with shape.cells bits; else blocked).
  // nullptr if the shape is invalid or an allocation fails. Never throws.
  static std::unique_ptr<BloomLayer> Create(const BlockedShape& shape) {
    std::unique_ptr<BloomLayer> layer(new (std::nothrow) BloomLayer);
    if (layer == nullptr) return nullptr;
    if (IsClassic(shape.block_cells)) {
      layer->classic_ = ClassicBloom::Create(shape.cells, shape.probes,
                                             shape.block_cells == kRedisBloomWordBits
                                                 ? ClassicProbing::kModulo
                                                 : ClassicProbing::kFastRange);
      if (layer->classic_ == nullptr) return nullptr;
    } else {
      layer->blocked_ = BlockedBloom::Create(
          BloomShape{shape.cells, shape.probes, shape.cells_per_key, shape.predicted_fp});
      if (layer->blocked_ == nullptr) return nullptr;
    }
    return layer;
  }
  // Bytes a shape gets beyond this wrapper (which the chain counts as its
  // Cells): the bit array and the one inner layer object that owns it.
  static uint64_t BytesFor(const BlockedShape& shape) {
    if (IsClassic(shape.block_cells)) return shape.cells / 8 + sizeof(ClassicBloom);
    return BlockedBloom::BytesFor(
               BloomShape{shape.cells, shape.probes, shape.cells_per_key, shape.predicted_fp}) +
           sizeof(BlockedBloom);
  }

  bool Add(const KeyHash& h) { return blocked_ ? blocked_->Add(h) : classic_->Add(h); }
  bool MayContain(const KeyHash& h) const {
    return blocked_ ? blocked_->MayContain(h) : classic_->MayContain(h);
  }

  static bool IsClassic(uint32_t block_cells) {
    return block_cells == kRedisBloomWordBits || block_cells == kClassicBloomGranuleBits;
  }

  bool redisbloom_layout() const {
    return classic_ != nullptr && classic_->probing() == ClassicProbing::kModulo;
  }
  bool classic() const { return classic_ != nullptr; }
  // The blocked layer inside, or nullptr for a classic one.
  BlockedBloom* blocked() const { return blocked_.get(); }
  uint64_t bits() const { return blocked_ ? blocked_->bits() : classic_->bits(); }
  uint32_t probes() const { return blocked_ ? blocked_->probes() : classic_->probes(); }
  uint64_t bytes() const { return blocked_ ? blocked_->bytes() : classic_->bytes(); }
  // 512-bit blocks of the array, for filter_health's sampling: a classic
  // layer is allocated in whole 64-byte lines (its padding words stay 0).
  uint64_t num_blocks() const {
    return blocked_ ? blocked_->num_blocks() : (classic_->num_words() + 7) / 8;
  }
  // Bit j of word i is bit 64 i + j of the layer, in both kinds.
  const std::atomic<uint64_t>* words() const {
    return blocked_ ? blocked_->words() : classic_->words();
  }
  uint64_t num_words() const { return blocked_ ? blocked_->num_words() : classic_->num_words(); }
  // For a loader filling a restored layer before it is published.
  std::atomic<uint64_t>* mutable_words() {
    return blocked_ ? blocked_->mutable_words() : classic_->mutable_words();
  }

 private:
  BloomLayer() = default;
  std::unique_ptr<BlockedBloom> blocked_;  // exactly one of the two is set
  std::unique_ptr<ClassicBloom> classic_;
};

}  // namespace bloomgate
