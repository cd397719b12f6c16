// The t-digest's codec (FilterKind::kTDigest = 8).
//
// HEADER BYTES, layout version 2: the common prefix (header_fields.h, 12
// bytes, block_layout 7, seed 0: a digest hashes nothing), then
//
//   +12 u64 compression         [1, 357,913,939] (capacity = 6 x it + 10)
//   +20 f64 min                 finite and <= max; DBL_MAX when empty
//   +28 f64 max                 finite; -DBL_MAX when empty
//   +36 u32 merged_nodes        merged + unmerged <= capacity
//   +40 u32 unmerged_nodes
//   +44 u64 merged_weight       the merged centroids' weights sum to it
//   +52 u64 unmerged_weight     the unmerged ones' to it; the two <= 2^63 - 1
//   +60 u64 total_compressions  <= 2^63 - 1 (TDIGEST.INFO)
//   payload: n = merged + unmerged means (f64), then their n weights (u64,
//   each >= 1), little-endian; 16 x n bytes
//
// The unmerged values are kept as they are (RedisBloom compresses before it
// saves): a compress changes later answers, so a snapshot or a replay must
// hold exactly the digest the commands left.
//
// Read while written: no. An add moves centroids about; a snapshot copies
// the digest at its cut instead.
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "filters/t_digest.h"
#include "persistence/codec/family_codec.h"
#include "persistence/codec/header_fields.h"

namespace bloomgate {
namespace codec {
namespace {

// The next free block_layout value after header_fields.h's list.
constexpr uint8_t kTDigestLayout = 7;

struct TDigestHeader {
  uint64_t compression = 0;
  TDigest::State state;
};

Status DecodeTDigestHeader(std::string_view bytes, uint64_t payload_bytes, TDigestHeader* out) {
  FieldReader r(bytes);
  if (Status s = GetCommonUnseeded(&r, kTDigestLayout); !s.ok()) return s;
  TDigest::State& st = out->state;
  uint64_t merged_weight = 0;
  uint64_t unmerged_weight = 0;
  uint64_t compressions = 0;
  r.U64("compression", &out->compression);
  r.F64("min", &st.min);
  r.F64("max", &st.max);
  r.U32("merged_nodes", &st.merged_nodes);
  r.U32("unmerged_nodes", &st.unmerged_nodes);
  r.U64("merged_weight", &merged_weight);
  r.U64("unmerged_weight", &unmerged_weight);
  r.U64("total_compressions", &compressions);
  if (r.failed()) return r.Truncated();
  if (Status s = r.CheckEnd(); !s.ok()) return s;
  if (out->compression < 1 || out->compression > TDigest::kMaxCompression) {
    return NotIn("compression", Num(out->compression),
                 Range(1, TDigest::kMaxCompression));
  }
  const uint64_t capacity = TDigest::CapacityFor(static_cast<int64_t>(out->compression));
  const uint64_t nodes = uint64_t{st.merged_nodes} + st.unmerged_nodes;
  if (nodes > capacity) return NotIn("merged_nodes + unmerged_nodes", Num(nodes), Range(0, capacity));
  if (merged_weight > INT64_MAX || unmerged_weight > INT64_MAX ||
      merged_weight + unmerged_weight > INT64_MAX) {
    return NotIn("merged_weight + unmerged_weight", Num(merged_weight + unmerged_weight),
                 "[0, 2^63 - 1]");
  }
  if (compressions > INT64_MAX) {
    return NotIn("total_compressions", Num(compressions), "[0, 2^63 - 1]");
  }
  if (nodes == 0 ? !(st.min == DBL_MAX && st.max == -DBL_MAX)
                 : !(std::isfinite(st.min) && std::isfinite(st.max) && st.min <= st.max)) {
    return NotIn("min, max", Num(st.min) + ", " + Num(st.max),
                 nodes == 0 ? "the empty digest's DBL_MAX, -DBL_MAX" : "finite, min <= max");
  }
  st.merged_weight = static_cast<int64_t>(merged_weight);
  st.unmerged_weight = static_cast<int64_t>(unmerged_weight);
  st.total_compressions = static_cast<int64_t>(compressions);
  return CheckPayloadBytes(nodes * 16, payload_bytes, "centroids");
}

uint64_t ReadLe64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void WriteLe64(uint64_t v, uint8_t* p) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Buffers the payload (16 bytes a centroid, bounded by the capacity the
// header's compression gave and the digest Create already charged), then
// checks every centroid as TDigest::Restore does.
class Loader final : public FilterLoader {
 public:
  Loader(TDigestHeader header, std::unique_ptr<TDigest> digest, std::vector<uint8_t> payload)
      : header_(std::move(header)), digest_(std::move(digest)), payload_(std::move(payload)) {}

  Status Write(uint64_t offset, const uint8_t* data, uint64_t len) override {
    if (offset > payload_.size() || len > payload_.size() - offset) {
      return Status::Error("t-digest payload: bytes past the centroids");
    }
    std::memcpy(payload_.data() + offset, data, static_cast<size_t>(len));
    return Status::Ok();
  }

  Status Finish(AnyFilter* out) override {
    if (digest_ == nullptr) return Status::Error("t-digest payload: finished twice");
    const size_t n = payload_.size() / 16;
    std::vector<double> means(n);
    std::vector<int64_t> weights(n);
    for (size_t i = 0; i < n; ++i) {
      means[i] = std::bit_cast<double>(ReadLe64(payload_.data() + 8 * i));
      weights[i] = static_cast<int64_t>(ReadLe64(payload_.data() + 8 * (n + i)));
    }
    TDigest::State state = header_.state;
    state.means = means;
    state.weights = weights;
    if (!digest_->Restore(state)) {
      return Status::Error(
          "t-digest payload: a centroid is not finite, has a weight below 1, or the weights do "
          "not sum to the header's merged_weight and unmerged_weight");
    }
    *out = std::move(digest_);
    return Status::Ok();
  }

 private:
  TDigestHeader header_;
  std::unique_ptr<TDigest> digest_;
  std::vector<uint8_t> payload_;
};

class Codec final : public TypedCodec<TDigest> {
 public:
  FilterKind kind() const override { return FilterKind::kTDigest; }
  std::string_view name() const override { return "t-digest"; }
  bool payload_readable_while_written() const override { return false; }
  uint64_t max_header_bytes() const override { return kCommonBytes + 56; }  // 68

  Status BeginLoad(std::string_view header_bytes, uint64_t payload_bytes,
                   const FilterLimits& limits, MemoryBudget* budget,
                   std::unique_ptr<FilterLoader>* out) const override {
    TDigestHeader header;
    if (Status s = DecodeTDigestHeader(header_bytes, payload_bytes, &header); !s.ok()) return s;
    std::unique_ptr<TDigest> digest;
    const FilterStatus status =
        OverCap(payload_bytes, limits)
            ? FilterStatus::kFilterMemoryLimit
            : TDigest::Create(static_cast<int64_t>(header.compression), limits, budget, &digest);
    if (status != FilterStatus::kOk) return RestoreFailed(status, payload_bytes, limits, budget);
    std::vector<uint8_t> payload;
    try {
      payload.assign(static_cast<size_t>(payload_bytes), 0);
    } catch (const std::bad_alloc&) {
      return Status::Error("t-digest payload: out of memory for " + Num(payload_bytes) + " bytes");
    }
    out->reset(new (std::nothrow) Loader(std::move(header), std::move(digest), std::move(payload)));
    if (*out == nullptr) return Status::Error("t-digest: out of memory for its loader");
    return Status::Ok();
  }

 protected:
  FilterHeader DescribeTyped(const TDigest& d) const override {
    FilterHeader header;
    ByteWriter w(&header.bytes);
    header.kind = FilterKind::kTDigest;
    PutCommon(&w, kTDigestLayout, /*hash_seed=*/0);
    w.PutU64(static_cast<uint64_t>(d.compression()));
    w.PutF64(d.min());
    w.PutF64(d.max());
    w.PutU32(d.merged_nodes());
    w.PutU32(d.unmerged_nodes());
    w.PutU64(static_cast<uint64_t>(d.merged_weight()));
    w.PutU64(static_cast<uint64_t>(d.unmerged_weight()));
    w.PutU64(static_cast<uint64_t>(d.total_compressions()));
    header.payload_bytes = uint64_t{d.nodes()} * 16;
    return header;
  }

  void CopyTyped(const TDigest& d, const FilterHeader& header, uint64_t offset, uint8_t* out,
                 uint64_t len) const override {
    const uint64_t n = header.payload_bytes / 16;
    const uint64_t end = offset + len;
    // Slot s of the 2n words: the s-th mean, then the (s - n)-th weight.
    for (uint64_t slot = offset / 8; slot * 8 < end; ++slot) {
      uint8_t word[8] = {};
      if (slot < 2 * n) {
        const uint32_t i = static_cast<uint32_t>(slot < n ? slot : slot - n);
        WriteLe64(slot < n ? std::bit_cast<uint64_t>(d.mean_at(i))
                           : static_cast<uint64_t>(d.weight_at(i)),
                  word);
      }
      const uint64_t from = std::max(offset, slot * 8);
      const uint64_t to = std::min(end, slot * 8 + 8);
      std::memcpy(out + (from - offset), word + (from - slot * 8), static_cast<size_t>(to - from));
    }
  }
};

}  // namespace
}  // namespace codec

const FamilyCodec& TDigestCodec() {
  static const codec::Codec instance;
  return instance;
}

}  // namespace bloomgate
