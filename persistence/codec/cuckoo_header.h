// The cuckoo codec's header for a filter shape, without a filter: what the
// codec writes for a filter of that shape (DescribeTyped), and what the
// RedisBloom chunk importer (persistence/redisbloom_cuckoo_chunk.h) hands to
// the codec's own loader, so an imported filter passes exactly the checks a
// snapshot's does.
#pragma once

#include "filters/cuckoo_filter.h"
#include "persistence/filter_codec.h"

namespace bloomgate {

// Header bytes (cuckoo_codec.cc's diagram) and payload_bytes for `shape`.
// The shape is not validated here; the loader does that.
FilterHeader DescribeCuckooShape(const CuckooFilterShape& shape);

}  // namespace bloomgate
