#include "persistence/redisbloom_dump.h"

#include <algorithm>
#include <vector>

#include "filters/limits.h"
#include "filters/redisbloom_layout.h"
#include "persistence/byte_io.h"
#include "persistence/codec/header_fields.h"
#include "persistence/codec/payload_segments.h"
#include "persistence/filter_codec.h"

namespace bloomgate {
namespace {

// RedisBloom's bloom.h option bits.
constexpr uint32_t kOptNoRound = 1;
constexpr uint32_t kOptEntsAreBits = 2;
constexpr uint32_t kOptForce64 = 4;
constexpr uint32_t kOptNoScaling = 8;
// RedisBloom's default growth, which its NONSCALING filters keep in the header.
constexpr uint32_t kRedisBloomDefaultGrowth = 2;

Status Bad(const std::string& why) { return Status::Error("RedisBloom header: " + why); }

}  // namespace

void NextRedisBloomChunk(const ScalableBloomFilter& filter, uint64_t iterator,
                         uint64_t* next_iterator, std::string* chunk, uint64_t max_chunk_bytes) {
  chunk->clear();
  *next_iterator = 0;
  const std::vector<BloomLayerInfo> layers = filter.Layers();
  ByteWriter w(chunk);
  if (iterator == 0) {
    w.PutU64(filter.items());
    w.PutU32(static_cast<uint32_t>(layers.size()));
    w.PutU32(kOptNoRound | kOptForce64 | (filter.scaling() ? 0 : kOptNoScaling));
    w.PutU32(filter.scaling() ? filter.expansion() : kRedisBloomDefaultGrowth);
    for (const BloomLayerInfo& layer : layers) {
      const double bpe = RedisBloomBitsPerEntry(layer.error_rate);
      w.PutU64(layer.bytes);
      w.PutU64(layer.bits);
      w.PutU64(layer.items);
      w.PutF64(layer.error_rate);
      w.PutF64(bpe);
      w.PutU32(layer.probes);
      w.PutU64(layer.capacity);
      w.PutU8(0);  // n2: NOROUND
    }
    *next_iterator = 1;
    return;
  }
  // The link holding byte `offset`, and where in it; a piece never spans
  // two links, as RedisBloom's getLinkPos walk gives it.
  const uint64_t offset = iterator - 1;
  uint64_t start = 0;  // of layer i in the payload
  for (uint32_t i = 0; i < layers.size(); ++i) {
    const uint64_t within = offset - start;
    if (offset >= start && within < layers[i].bytes) {
      const uint64_t n =
          std::min(layers[i].bytes - within, std::max<uint64_t>(max_chunk_bytes, 1));
      chunk->resize(static_cast<size_t>(n));
      codec::LoadWordBytes(filter.layer(i).words(), within,
                           reinterpret_cast<uint8_t*>(chunk->data()), n);
      *next_iterator = iterator + n;
      return;
    }
    start += layers[i].bytes;
  }
}

Status RedisBloomHeaderToFilterHeader(std::string_view chunk, std::string* header_bytes,
                                      uint64_t* payload_bytes) {
  header_bytes->clear();
  *payload_bytes = 0;
  ByteReader r(chunk);
  uint64_t size = 0;
  uint32_t nfilters = 0, options = 0, growth = 0;
  if (!r.GetU64(&size) || !r.GetU32(&nfilters) || !r.GetU32(&options) || !r.GetU32(&growth)) {
    return Bad("truncated (" + std::to_string(chunk.size()) + " bytes)");
  }
  if (nfilters < 1 || nfilters > kMaxBloomLayers) {
    return Bad("nfilters " + std::to_string(nfilters) + " not in [1, 64]");
  }
  if (chunk.size() != kRedisBloomHeaderFixedBytes + kRedisBloomLinkBytes * uint64_t{nfilters}) {
    return Bad(std::to_string(chunk.size()) + " bytes for " + std::to_string(nfilters) + " links");
  }
  if ((options & ~(kOptNoRound | kOptEntsAreBits | kOptForce64 | kOptNoScaling)) != 0 ||
      (options & kOptEntsAreBits) != 0 || (options & kOptNoRound) == 0 ||
      (options & kOptForce64) == 0) {
    return Bad("options " + std::to_string(options) + " (only NOROUND | FORCE64 [| NO_SCALING])");
  }
  const bool scaling = (options & kOptNoScaling) == 0;
  if (scaling && (growth < 1 || growth > kMaxBloomExpansion)) {
    return Bad("growth " + std::to_string(growth) + " not in [1, 32768]");
  }
  if (!scaling && nfilters != 1) return Bad("a NONSCALING chain of " + std::to_string(nfilters) + " links");
  const uint32_t expansion = scaling ? growth : 0;

  std::string layers;
  ByteWriter lw(&layers);
  uint64_t items = 0;
  uint64_t payload = 0;
  double first_error = 0;
  for (uint32_t i = 0; i < nfilters; ++i) {
    uint64_t bytes = 0, bits = 0, link_size = 0, entries = 0;
    double error = 0, bpe = 0;
    uint32_t hashes = 0;
    uint8_t n2 = 0;
    r.GetU64(&bytes);
    r.GetU64(&bits);
    r.GetU64(&link_size);
    r.GetF64(&error);
    r.GetF64(&bpe);
    r.GetU32(&hashes);
    r.GetU64(&entries);
    r.GetU8(&n2);
    const std::string link = "link " + std::to_string(i) + " ";
    // RedisBloom's own checks (bloom_validate_integrity) first.
    if (!(error > 0 && error < 1)) return Bad(link + "error rate not in (0, 1)");
    if (bits == 0 || bytes > (uint64_t{1} << 61) || bits != bytes * 8) {
      return Bad(link + "bits " + std::to_string(bits) + " for " + std::to_string(bytes) + " bytes");
    }
    if (hashes != RedisBloomHashes(bpe)) return Bad(link + "hashes do not match bpe");
    // Then ours: whole words, a representable layer, RedisBloom's exact bpe
    // (so a re-export is the same bytes), a capacity, sizes that add up.
    if (n2 != 0) return Bad(link + "n2 " + std::to_string(n2) + " (power-of-two layers)");
    if (bits % 64 != 0 || bits > MaxBlockedCells(kRedisBloomWordBits) - 64) {
      return Bad(link + "bits " + std::to_string(bits) + " not whole words within our limit");
    }
    if (bpe != RedisBloomBitsPerEntry(error)) return Bad(link + "bpe does not match its error rate");
    if (hashes < 1 || hashes > kMaxBloomProbes) return Bad(link + "hashes not in [1, 64]");
    if (!(error <= kMaxBloomErrorRate)) return Bad(link + "error rate over 0.25");
    if (entries == 0) return Bad(link + "entries 0");
    if (link_size > kMaxFilterItems || items + link_size > kMaxFilterItems) {
      return Bad(link + "size " + std::to_string(link_size) + " past 2^62 items");
    }
    if (payload + bytes < payload) return Bad(link + "bytes overflow");
    items += link_size;
    payload += bytes;
    if (i == 0) first_error = error;
    lw.PutU64(entries);
    lw.PutU64(link_size);
    lw.PutF64(error);
    lw.PutU64(bits);
    lw.PutU32(kRedisBloomWordBits);
    lw.PutU32(hashes);
  }
  if (items != size) {
    return Bad("size " + std::to_string(size) + " but the links hold " + std::to_string(items));
  }
  // The requested rate RedisBloom started from: layer 0 got half of it when
  // scaling (ERROR_TIGHTENING_RATIO), all of it when not. Only INFO-like
  // reports read it; capped as BF.RESERVE caps it.
  const double requested = std::min(scaling ? first_error * 2 : first_error, kMaxBloomErrorRate);
  ByteWriter w(header_bytes);
  codec::PutCommon(&w, codec::kRedisBloomLayout, /*hash_seed=*/0, codec::kHashMurmur64A);
  w.PutF64(requested);
  w.PutU32(expansion);
  w.PutU32(nfilters);
  w.PutBytes(layers);
  *payload_bytes = payload;
  return Status::Ok();
}

}  // namespace bloomgate
