// A Redis DUMP payload of one of RedisBloom's module types, as RESTORE gets
// it from redis-cli, a client library or Redis's own MIGRATE:
//
//   +0   u8   7 (RDB_TYPE_MODULE_2)
//   +1        the module id (a 64-bit length: type name and encver) and the
//             module's values, ended by EOF (redisbloom_module_value.h)
//   end-10 u16 the RDB version of the Redis that dumped it, little-endian:
//             10 (Redis 7.0), 11 (7.2) or 12 (7.4)
//   end-8  u64 CRC-64/Jones of every byte before it, little-endian
//
// The version and the checksum are checked first (Redis's "DUMP payload
// version or checksum are wrong"); a payload of another type, another
// module, an encver RedisBloom never wrote, values that do not parse, or
// bytes left after the value are "Bad data format".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "filters/any_filter.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "persistence/dump_payload.h"

namespace bloomgate {

inline constexpr uint16_t kMinRedisDumpRdbVersion = 10;  // Redis 7.0
inline constexpr uint16_t kMaxRedisDumpRdbVersion = 12;  // Redis 7.4

DumpPayloadError DecodeRedisDumpPayload(std::string_view payload, const FilterLimits& limits,
                                        MemoryBudget* budget, AnyFilter* out,
                                        std::string* why = nullptr);

// Frames a module value (the bytes after the type byte) as Redis's DUMP
// does, for tests and tools that re-sign a payload.
std::string FrameRedisDumpPayload(std::string_view value, uint16_t rdb_version);

}  // namespace bloomgate
