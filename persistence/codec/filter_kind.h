// The persistent family tag: the first byte of every snapshot record, log
// filter record and SCANDUMP chunk says which codec reads what follows.
//
// The values are part of the on-disk format (FORMAT.md): a value is never
// changed and never reused, even after its family is gone. That is why the
// list lives in this one file rather than with each family: a new family
// takes the next free number here, and its codec registers under it in
// persistence/codec/codec_registry.cc.
#pragma once

#include <cstdint>
#include <string_view>

namespace bloomgate {

enum class FilterKind : uint8_t {
  kScalableBloom = 1,  // persistence/codec/bloom_codec.cc
  kCountingBloom = 2,  // persistence/codec/counting_bloom_codec.cc
  kCuckoo = 3,         // persistence/codec/cuckoo_codec.cc
  kCountMinSketch = 4, // persistence/codec/count_min_codec.cc
  kTopK = 5,           // persistence/codec/top_k_codec.cc
  kWindowedBloom = 6,  // persistence/codec/windowed_bloom_codec.cc
  kWindowedCountingBloom = 7,  // persistence/codec/windowed_counting_bloom_codec.cc
  kTDigest = 8,                // persistence/codec/t_digest_codec.cc
};

// The registered codec's name ("scalable bloom"), or "unknown filter kind".
std::string_view ToString(FilterKind kind);

}  // namespace bloomgate
