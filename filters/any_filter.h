// One stored filter of any family: what a key holds and what a snapshot
// record or a log record describes. The alternatives' order is part of
// nothing persistent (records carry their own FilterKind byte, and each
// family's codec names its alternative: persistence/codec/family_codec.h).
#pragma once

#include <memory>
#include <variant>

#include "filters/count_min_sketch.h"
#include "filters/counting_bloom_filter.h"
#include "filters/cuckoo_filter.h"
#include "filters/scalable_bloom_filter.h"
#include "filters/t_digest.h"
#include "filters/top_k.h"
#include "filters/windowed_bloom_filter.h"
#include "filters/windowed_counting_bloom_filter.h"

namespace bloomgate {

using AnyFilter = std::variant<std::unique_ptr<ScalableBloomFilter>,
                               std::unique_ptr<CountingBloomFilter>, std::unique_ptr<CuckooFilter>,
                               std::unique_ptr<CountMinSketch>, std::unique_ptr<TopK>,
                               std::unique_ptr<WindowedBloomFilter>,
                               std::unique_ptr<WindowedCountingBloomFilter>,
                               std::unique_ptr<TDigest>>;

}  // namespace bloomgate
