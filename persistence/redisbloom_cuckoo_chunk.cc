#include "persistence/redisbloom_cuckoo_chunk.h"

#include <algorithm>
#include <new>
#include <utility>

#include "persistence/byte_io.h"
#include "persistence/codec/cuckoo_header.h"

namespace bloomgate {

bool IsRedisBloomCuckooHeader(std::string_view chunk) {
  return chunk.size() == kRedisBloomCuckooHeaderBytes && !IsHeaderChunk(chunk);
}

Status DecodeRedisBloomCuckooHeader(std::string_view header, uint32_t max_expansions,
                                    CuckooFilterShape* out) {
  if (header.size() != kRedisBloomCuckooHeaderBytes) {
    return Status::Error("RedisBloom cuckoo header of " + std::to_string(header.size()) +
                         " bytes (expected 38)");
  }
  ByteReader r(header);
  uint64_t items = 0, buckets = 0, deletes = 0, filters = 0;
  uint16_t bucket_size = 0, max_iterations = 0, expansion = 0;
  r.GetU64(&items);
  r.GetU64(&buckets);
  r.GetU64(&deletes);
  r.GetU64(&filters);
  r.GetU16(&bucket_size);
  r.GetU16(&max_iterations);
  r.GetU16(&expansion);
  if (filters < 1 || filters > kMaxCuckooMaxExpansions) {
    return Status::Error("RedisBloom cuckoo header: numFilters " + std::to_string(filters) +
                         " not in [1, 65536]");
  }
  CuckooFilterShape& shape = *out;
  shape = CuckooFilterShape{};
  shape.scheme = CuckooScheme::kRedisBloom;
  shape.hash_seed = 0;
  shape.items = items;
  shape.base_buckets = buckets;
  shape.deletes = deletes;
  shape.num_filters = static_cast<uint32_t>(filters);
  shape.bucket_size = bucket_size;
  shape.max_iterations = max_iterations;
  shape.expansion = expansion;
  // RedisBloom does not save cf-max-expansions with a filter: ours applies,
  // but never below what the filter already has.
  shape.max_expansions = std::clamp<uint32_t>(std::max<uint32_t>(max_expansions, shape.num_filters),
                                              1, kMaxCuckooMaxExpansions);
  return Status::Ok();
}

std::string EncodeRedisBloomCuckooHeader(const CuckooFilterShape& shape) {
  std::string out;
  ByteWriter w(&out);
  w.PutU64(shape.items);
  w.PutU64(shape.base_buckets);
  w.PutU64(shape.deletes);
  w.PutU64(shape.num_filters);
  // Every field fits: bucket size <= 255, iterations <= 65535 and
  // expansion <= 32768 are the limits both servers enforce.
  w.PutU16(static_cast<uint16_t>(shape.bucket_size));
  w.PutU16(static_cast<uint16_t>(shape.max_iterations));
  w.PutU16(static_cast<uint16_t>(shape.expansion));
  return out;
}

void NextRedisBloomCuckooChunk(const CuckooFilter& filter, uint64_t iterator,
                               uint64_t* next_iterator, std::string* chunk, bool* end,
                               uint64_t max_chunk_bytes) {
  chunk->clear();
  *next_iterator = 0;
  *end = true;
  const CuckooFilterShape shape = filter.Shape();
  if (shape.items == 0) return;  // RedisBloom dumps no empty filter
  if (iterator == 0) {
    *chunk = EncodeRedisBloomCuckooHeader(shape);
    *next_iterator = 1;
    *end = false;
    return;
  }
  uint64_t offset = iterator - 1;
  for (uint32_t k = 0; k < shape.num_filters; ++k) {
    const uint64_t bytes =
        CuckooFilter::SubFilterBuckets(shape.base_buckets, shape.expansion, k) * shape.bucket_size;
    if (offset >= bytes) {
      offset -= bytes;
      continue;
    }
    // RedisBloom's CF_GetEncodedChunk: the rest of this sub-filter, at most
    // the limit. (It returns a whole small sub-filter even for an iterator
    // inside it; for the iterators its own SCANDUMP hands out, which start
    // each small sub-filter, that is the same chunk.)
    const uint64_t n = std::min(bytes - offset, std::max<uint64_t>(max_chunk_bytes, 1));
    chunk->resize(static_cast<size_t>(n));
    filter.CopySlots(k, offset, reinterpret_cast<uint8_t*>(chunk->data()), n);
    *next_iterator = iterator + n;
    *end = false;
    return;
  }
}

// ---- ChunkedFilterLoad's RedisBloom cuckoo start (declared in dump_chunk.h) ---
// (its AddRedisBloom, shared with the Bloom import, is in dump_chunk.cc)

Status ChunkedFilterLoad::StartRedisBloomCuckoo(std::string_view header, uint32_t max_expansions,
                                                const FilterLimits& limits, MemoryBudget* budget,
                                                std::unique_ptr<ChunkedFilterLoad>* out) {
  out->reset();
  CuckooFilterShape shape;
  if (Status s = DecodeRedisBloomCuckooHeader(header, max_expansions, &shape); !s.ok()) return s;
  // Through the codec's own loader: the same checks (ranges, powers of two,
  // memory caps, budget) as a snapshot's cuckoo record.
  const FilterHeader ours = DescribeCuckooShape(shape);
  std::unique_ptr<FilterLoader> loader;
  if (Status s = FilterLoader::Begin(FilterKind::kCuckoo, ours.bytes, ours.payload_bytes, limits,
                                     budget, &loader);
      !s.ok()) {
    return s;
  }
  out->reset(new (std::nothrow) ChunkedFilterLoad(FilterKind::kCuckoo, /*header_id=*/0,
                                                  ours.payload_bytes, std::move(loader),
                                                  /*redisbloom=*/true));
  if (*out == nullptr) return Status::Error("out of memory for the dump loader");
  return Status::Ok();
}


}  // namespace bloomgate
