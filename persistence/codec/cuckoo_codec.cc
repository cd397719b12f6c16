// The cuckoo filter's codec (FilterKind::kCuckoo = 3).
//
// HEADER BYTES, layout version 2 (version 1 differs only in its seed):
// the common prefix (header_fields.h, 12 bytes: block_layout 2, or for a
// filter imported from RedisBloom hash_algorithm 2 with block_layout 5 and
// seed 0: CuckooScheme::kRedisBloom), then
//
//   +12 u32 bucket_size      [1, 255]
//   +16 u32 max_iterations   [1, 65535]
//   +20 u32 expansion        0 or a power of two <= 32768
//   +24 u32 max_expansions   [1, 65536]
//   +28 u64 base_buckets     power of two, [2, 2^56] ([1, 2^56] for RedisBloom's scheme)
//   +36 u32 num_filters      [1, max_expansions]; 1 when expansion is 0
//   +40 u64 items            occupied slots; Finish checks it against them
//   +48 u64 deletes          removes since the last compaction
//   +56 per sub-filter, 8 bytes each:
//       +0  u64 num_buckets  must be base_buckets x expansion^k, <= 2^56
//   payload: each sub-filter's num_buckets * bucket_size slot bytes
//
// Read while written: no. An insert may relocate fingerprints between
// buckets, so a copy made while writers run can lose or double one; a
// snapshot copies it at its cut instead. Each piece is copied under the
// filter's shared lock.
#include <bit>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "filters/cuckoo_filter.h"
#include "persistence/codec/cuckoo_header.h"
#include "persistence/codec/family_codec.h"
#include "persistence/codec/header_fields.h"
#include "persistence/codec/payload_segments.h"

namespace bloomgate {
namespace codec {
namespace {

// Where CopyPayload finds the sub-filter count (see the diagram).
constexpr size_t kFilterCountAt = kCommonBytes + 4 * 4 + 8;  // 36

Status DecodeCuckooHeader(std::string_view bytes, uint64_t payload_bytes,
                          CuckooFilterShape* out) {
  FieldReader r(bytes);
  CuckooFilterShape& shape = *out;
  bool redisbloom = false;
  if (Status s = GetCommonOrRedisBloom(&r, kCuckooLayout, kRedisBloomLayout,
                                       &shape.hash_seed, &redisbloom);
      !s.ok()) {
    return s;
  }
  shape.scheme = redisbloom ? CuckooScheme::kRedisBloom : CuckooScheme::kNative;
  r.U32("bucket_size", &shape.bucket_size);
  r.U32("max_iterations", &shape.max_iterations);
  r.U32("expansion", &shape.expansion);
  r.U32("max_expansions", &shape.max_expansions);
  r.U64("base_buckets", &shape.base_buckets);
  r.U32("num_filters", &shape.num_filters);
  r.U64("items", &shape.items);
  r.U64("deletes", &shape.deletes);
  if (r.failed()) return r.Truncated();
  if (shape.deletes > kMaxFilterItems) {
    return NotIn("deletes", Num(shape.deletes), "[0, 2^62]");
  }
  if (shape.bucket_size < 1 || shape.bucket_size > kMaxCuckooBucketSize) {
    return NotIn("bucket_size", Num(uint64_t{shape.bucket_size}), Range(1, kMaxCuckooBucketSize));
  }
  if (shape.max_iterations < 1 || shape.max_iterations > kMaxCuckooIterations) {
    return NotIn("max_iterations", Num(uint64_t{shape.max_iterations}),
                 Range(1, kMaxCuckooIterations));
  }
  if (shape.expansion > kMaxCuckooExpansion ||
      (shape.expansion != 0 && !std::has_single_bit(shape.expansion))) {
    return Status::Error("expansion " + Num(uint64_t{shape.expansion}) +
                         " not 0 or a power of two in [1, " + Num(uint64_t{kMaxCuckooExpansion}) +
                         "]");
  }
  if (shape.max_expansions < 1 || shape.max_expansions > kMaxCuckooMaxExpansions) {
    return NotIn("max_expansions", Num(uint64_t{shape.max_expansions}),
                 Range(1, kMaxCuckooMaxExpansions));
  }
  const uint64_t min_buckets = CuckooFilter::MinBaseBuckets(shape.scheme);
  if (shape.base_buckets < min_buckets || shape.base_buckets > kMaxCuckooBuckets ||
      !std::has_single_bit(shape.base_buckets)) {
    return Status::Error("base_buckets " + Num(shape.base_buckets) + " not a power of two in [" +
                         Num(min_buckets) + ", 2^56]");
  }
  if (shape.num_filters < 1 || shape.num_filters > shape.max_expansions) {
    return NotIn("num_filters", Num(uint64_t{shape.num_filters}),
                 Range(1, shape.max_expansions) + " (max_expansions)");
  }
  if (shape.expansion == 0 && shape.num_filters != 1) {
    return Status::Error("num_filters " + Num(uint64_t{shape.num_filters}) +
                         " but expansion 0 (non-scaling) filters have exactly 1");
  }
  // Refuse a count the bytes cannot hold before looping over it.
  if (r.remaining() / 8 < shape.num_filters) {
    return Status::Error("header ends inside sub-filter " + Num(uint64_t{r.remaining() / 8}) +
                         " num_buckets (num_filters " + Num(uint64_t{shape.num_filters}) + ")");
  }
  uint64_t needed = 0;
  for (uint32_t k = 0; k < shape.num_filters; ++k) {
    uint64_t buckets = 0;
    r.SetGroup("sub-filter", k);
    r.U64("num_buckets", &buckets);
    if (r.failed()) return r.Truncated();
    const uint64_t expected = CuckooFilter::SubFilterBuckets(shape.base_buckets, shape.expansion, k);
    if (expected > kMaxCuckooBuckets) {
      return Status::Error("sub-filter " + Num(uint64_t{k}) +
                           " would need more than 2^56 buckets (base_buckets " +
                           Num(shape.base_buckets) + " x expansion " +
                           Num(uint64_t{shape.expansion}) + "^" + Num(uint64_t{k}) + ")");
    }
    if (buckets != expected) {
      return Status::Error("sub-filter " + Num(uint64_t{k}) + " num_buckets " + Num(buckets) +
                           " (expected base_buckets x expansion^" + Num(uint64_t{k}) + " = " +
                           Num(expected) + ")");
    }
    // buckets * bucket_size <= 2^56 * 255 < 2^64.
    if (!AddBytes(&needed, buckets * shape.bucket_size)) return PayloadOverflow("sub-filters");
  }
  if (Status s = r.CheckEnd(); !s.ok()) return s;
  if (shape.items > needed) {
    return Status::Error("items " + Num(shape.items) + " but the sub-filters have only " +
                         Num(needed) + " slots");
  }
  return CheckPayloadBytes(needed, payload_bytes, "sub-filters");
}

class Loader final : public SegmentedLoader {
 public:
  Loader(uint64_t payload_bytes, std::unique_ptr<CuckooFilter> filter)
      : SegmentedLoader(payload_bytes), filter_(std::move(filter)) {
    const CuckooFilterShape shape = filter_->Shape();
    for (uint32_t k = 0; k < shape.num_filters; ++k) {
      const uint64_t buckets = CuckooFilter::SubFilterBuckets(shape.base_buckets, shape.expansion, k);
      AddSegment(buckets * shape.bucket_size, nullptr, filter_->mutable_slots(k));
    }
  }

 private:
  Status Complete(AnyFilter* out) override {
    uint64_t occupied = 0;
    for (const CuckooSubFilterInfo& sub : filter_->SubFilters()) occupied += sub.occupied;
    if (occupied != filter_->items()) {
      return Status::Error("cuckoo payload: items " + Num(filter_->items()) + " but " +
                           Num(occupied) + " occupied slots");
    }
    *out = std::move(filter_);
    return Status::Ok();
  }
  std::unique_ptr<CuckooFilter> filter_;
};

class Codec final : public TypedCodec<CuckooFilter> {
 public:
  FilterKind kind() const override { return FilterKind::kCuckoo; }
  std::string_view name() const override { return "cuckoo"; }
  bool payload_readable_while_written() const override { return false; }
  // 56 + 8 x 65,536 sub-filters = 524,344 bytes: the largest of any family.
  uint64_t max_header_bytes() const override {
    return 56 + 8 * uint64_t{kMaxCuckooMaxExpansions};
  }

  Status BeginLoad(std::string_view header_bytes, uint64_t payload_bytes,
                   const FilterLimits& limits, MemoryBudget* budget,
                   std::unique_ptr<FilterLoader>* out) const override {
    CuckooFilterShape shape;
    if (Status s = DecodeCuckooHeader(header_bytes, payload_bytes, &shape); !s.ok()) return s;
    std::unique_ptr<CuckooFilter> filter;
    const FilterStatus status = OverCap(payload_bytes, limits)
                                    ? FilterStatus::kFilterMemoryLimit
                                    : CuckooFilter::Restore(shape, limits, budget, &filter);
    if (status != FilterStatus::kOk) return RestoreFailed(status, payload_bytes, limits, budget);
    out->reset(new (std::nothrow) Loader(payload_bytes, std::move(filter)));
    return LoaderMade(*out);
  }

 protected:
  FilterHeader DescribeTyped(const CuckooFilter& cuckoo) const override {
    return DescribeCuckooShape(cuckoo.Shape());  // the one shared lock
  }

  void CopyTyped(const CuckooFilter& f, const FilterHeader& header, uint64_t offset,
                 uint8_t* out, uint64_t len) const override {
    // Sub-filter k's size is fixed by k (base x expansion^k), so a sub-filter
    // freed by compaction since the header was made just reads as zeros.
    CopySegments(
        CountAt(header, kFilterCountAt), offset, out, len,
        [&](uint32_t k) {
          return CuckooFilter::SubFilterBuckets(f.num_buckets(), f.expansion(), k) *
                 f.bucket_size();
        },
        [&](uint32_t k, uint64_t within, uint8_t* to, uint64_t n) {
          const uint64_t copied = f.CopySlots(k, within, to, n);  // takes the shared lock
          if (copied < n) std::memset(to + copied, 0, static_cast<size_t>(n - copied));
        });
  }
};

}  // namespace
}  // namespace codec

FilterHeader DescribeCuckooShape(const CuckooFilterShape& shape) {
  using namespace codec;
  FilterHeader header;
  ByteWriter w(&header.bytes);
  header.kind = FilterKind::kCuckoo;
  if (shape.scheme == CuckooScheme::kRedisBloom) {
    PutCommon(&w, kRedisBloomLayout, /*hash_seed=*/0, kHashMurmur64A);
  } else {
    PutCommon(&w, kCuckooLayout, shape.hash_seed);
  }
  w.PutU32(shape.bucket_size);
  w.PutU32(shape.max_iterations);
  w.PutU32(shape.expansion);
  w.PutU32(shape.max_expansions);
  w.PutU64(shape.base_buckets);
  w.PutU32(shape.num_filters);
  w.PutU64(shape.items);
  w.PutU64(shape.deletes);
  for (uint32_t k = 0; k < shape.num_filters; ++k) {
    const uint64_t buckets = CuckooFilter::SubFilterBuckets(shape.base_buckets, shape.expansion, k);
    w.PutU64(buckets);
    header.payload_bytes += buckets * shape.bucket_size;
  }
  return header;
}

const FamilyCodec& CuckooCodec() {
  static const codec::Codec instance;
  return instance;
}

}  // namespace bloomgate
