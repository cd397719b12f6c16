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
#include <new>
#include <variant>

#include "filters/block_words.h"
#include "filters/blocked_bloom.h"
#include "filters/bloom_math.h"
#include "filters/limits.h"
#include "filters/redisbloom_layout.h"

namespace bloomgate {

class BloomLayer {
 public:
  // A zeroed layer for a chain shape: shape.block_cells picks the kind
  // (kRedisBloomWordBits: RedisBloom's classic, kClassicBloomGranuleBits:
  // ours, both with shape.cells bits; else blocked).
  // nullptr if the shape is invalid or an allocation fails. Never throws.
  static std::unique_ptr<BloomLayer> Create(const BlockedShape& shape) {
    if (!Valid(shape)) return nullptr;
    std::atomic<uint64_t>* words = internal::NewZeroedBlockWords(BytesFor(shape));
    if (words == nullptr) return nullptr;
    std::unique_ptr<BloomLayer> layer(new (std::nothrow) BloomLayer(shape, words, true));
    if (layer == nullptr) internal::DeleteBlockWords(words, BytesFor(shape));
    return layer;
  }
  // The same layer built in place at `at` (sizeof(BloomLayer) bytes, aligned
  // for it), over `words`: BytesFor(shape) bytes, 64-byte aligned, which it
  // zeroes and does not own (they live in the same allocation as the layer's
  // filter: LayerChain's owner block); `words` null: over an array of its
  // own, as Create's. Destroy with ~BloomLayer(), then free the storage.
  // nullptr if the shape is invalid or an allocation fails. Never throws.
  static BloomLayer* CreateAt(void* at, const BlockedShape& shape, std::atomic<uint64_t>* words) {
    if (!Valid(shape)) return nullptr;
    if (words == nullptr) {
      words = internal::NewZeroedBlockWords(BytesFor(shape));
      if (words == nullptr) return nullptr;
      return new (at) BloomLayer(shape, words, /*owns_words=*/true);
    }
    for (uint64_t i = 0; i < BytesFor(shape) / sizeof(uint64_t); ++i) {
      new (&words[i]) std::atomic<uint64_t>(0);
    }
    return new (at) BloomLayer(shape, words, /*owns_words=*/false);
  }
  // Bytes of the bit array a shape gets (the inner layer object is part of
  // this one): whole 64-byte lines in both kinds.
  static uint64_t BytesFor(const BlockedShape& shape) {
    if (IsClassic(shape.block_cells)) return ClassicBloom::BytesFor(shape.cells);
    return BlockedBloom::BytesFor(BloomShapeOf(shape));
  }

  bool Add(const KeyHash& h) {
    if (BlockedBloom* b = blocked()) return b->Add(h);
    return std::get<ClassicBloom>(inner_).Add(h);
  }
  bool MayContain(const KeyHash& h) const {
    if (const BlockedBloom* b = blocked()) return b->MayContain(h);
    return std::get<ClassicBloom>(inner_).MayContain(h);
  }

  static bool IsClassic(uint32_t block_cells) {
    return block_cells == kRedisBloomWordBits || block_cells == kClassicBloomGranuleBits;
  }

  bool redisbloom_layout() const {
    const ClassicBloom* c = std::get_if<ClassicBloom>(&inner_);
    return c != nullptr && c->probing() == ClassicProbing::kModulo;
  }
  bool classic() const { return blocked() == nullptr; }
  // The blocked layer inside, or nullptr for a classic one.
  BlockedBloom* blocked() { return std::get_if<BlockedBloom>(&inner_); }
  const BlockedBloom* blocked() const { return std::get_if<BlockedBloom>(&inner_); }
  uint64_t bits() const { return std::visit([](const auto& l) { return l.bits(); }, inner_); }
  uint32_t probes() const { return std::visit([](const auto& l) { return l.probes(); }, inner_); }
  uint64_t bytes() const { return std::visit([](const auto& l) { return l.bytes(); }, inner_); }
  // 512-bit blocks of the array, for filter_health's sampling: a classic
  // layer is allocated in whole 64-byte lines (its padding words stay 0).
  uint64_t num_blocks() const {
    if (const BlockedBloom* b = blocked()) return b->num_blocks();
    return (std::get<ClassicBloom>(inner_).num_words() + 7) / 8;
  }
  // Bit j of word i is bit 64 i + j of the layer, in both kinds.
  const std::atomic<uint64_t>* words() const {
    return std::visit([](const auto& l) { return l.words(); }, inner_);
  }
  uint64_t num_words() const {
    return std::visit([](const auto& l) { return l.num_words(); }, inner_);
  }
  // For a loader filling a restored layer before it is published.
  std::atomic<uint64_t>* mutable_words() {
    return std::visit([](auto& l) { return l.mutable_words(); }, inner_);
  }

  BloomLayer(const BloomLayer&) = delete;
  BloomLayer& operator=(const BloomLayer&) = delete;

 private:
  static BloomShape BloomShapeOf(const BlockedShape& shape) {
    return BloomShape{shape.cells, shape.probes, shape.cells_per_key, shape.predicted_fp};
  }
  // What the inner layers' own Create would refuse.
  static bool Valid(const BlockedShape& shape) {
    if (shape.cells == 0 || shape.probes < 1 || shape.probes > kMaxBloomProbes) return false;
    if (IsClassic(shape.block_cells)) {
      return shape.cells % 64 == 0 && shape.cells < MaxBlockedCells(kRedisBloomWordBits);
    }
    return true;
  }
  BloomLayer(const BlockedShape& shape, std::atomic<uint64_t>* words, bool owns_words)
      : inner_(Inner(shape, words, owns_words)) {}
  // Built by guaranteed copy elision: neither inner type moves.
  static std::variant<BlockedBloom, ClassicBloom> Inner(const BlockedShape& shape,
                                                        std::atomic<uint64_t>* words,
                                                        bool owns_words) {
    if (IsClassic(shape.block_cells)) {
      return std::variant<BlockedBloom, ClassicBloom>(
          std::in_place_type<ClassicBloom>, words, shape.cells / 64, shape.probes,
          shape.block_cells == kRedisBloomWordBits ? ClassicProbing::kModulo
                                                   : ClassicProbing::kFastRange,
          owns_words);
    }
    return std::variant<BlockedBloom, ClassicBloom>(
        std::in_place_type<BlockedBloom>, words, BlockedBloom::BytesFor(BloomShapeOf(shape)) /
                                                     BlockedBloom::kBlockBytes,
        shape.probes, owns_words);
  }
  // The inner layer inline (one object, no pointer to follow): 32 bytes.
  std::variant<BlockedBloom, ClassicBloom> inner_;
};

}  // namespace bloomgate
