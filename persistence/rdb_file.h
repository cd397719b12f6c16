// Reads a Redis RDB file (what SAVE, BGSAVE, `redis-cli --rdb` and a
// replica's full sync write) of RDB version 9 (Redis 6.x) to 12 (Redis 7.4),
// key by key, decoding RedisBloom's module values into our filters
// (redisbloom_module_value.h) and stepping over every other value, so that
// `bloomgate import-rdb` can load the first and list the rest.
//
//   "REDIS" 4 ASCII digits (the RDB version)
//   then opcodes until EOF:
//     AUX (250) string string                 server facts: redis-ver, ctime...
//     MODULE_AUX (247) id, UINT when, values  a module's aux data: skipped
//     FUNCTION2 (245) string                  a function library: skipped
//     SELECTDB (254) length                   the database of the keys after it
//     RESIZEDB (251) length length            hash table sizes: skipped
//     SLOT_INFO (244) length x 3              cluster slot sizes: skipped
//     EXPIRETIME_MS (252) u64 LE ms           the next key's deadline
//     EXPIRETIME (253) u32 LE seconds         the same, in seconds (old files)
//     IDLE (248) length / FREQ (249) u8       the next key's LRU / LFU: skipped
//     a value type byte, the key (a string), the value
//     EOF (255), then u64 LE CRC-64/Jones of every byte before it (0 when the
//     server ran with rdbchecksum no)
//
// The checksum is checked when the reader is made, before any key is read,
// so a damaged or cut file is refused as a whole ("checksum mismatch",
// "truncated") rather than half loaded. Value encodings skipped: strings,
// lists (plain, ziplist, quicklist 1 and 2), sets (plain, intset, listpack),
// sorted sets (plain with text or binary doubles, ziplist, listpack), hashes
// (plain, zipmap, ziplist, listpack, and 7.4's field-TTL forms), streams
// (listpacks 1-3 with consumer groups), and module values of any module
// (their opcode-typed values up to EOF).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "filters/any_filter.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "persistence/dump_payload.h"
#include "persistence/rdb_encoding.h"
#include "persistence/status.h"

namespace bloomgate {

inline constexpr int kMinRdbFileVersion = 9;   // Redis 6.0 / 6.2
inline constexpr int kMaxRdbFileVersion = 12;  // Redis 7.4

struct RdbKey {
  std::string name;
  uint64_t db = 0;
  int64_t expire_at_ms = 0;  // 0 = none; else Unix ms
  std::string type;          // "string", "hash", ..., or the module type's name
  bool redisbloom = false;   // one of RedisBloom's five types
  // For a RedisBloom key: the filter, or why not (decode_error != kNone).
  DumpPayloadError decode_error = DumpPayloadError::kNone;
  std::string why;
};

class RdbFile {
 public:
  // Checks the magic, the version and the trailing checksum of `bytes` (the
  // whole file, which must outlive the reader).
  static Status Open(std::string_view bytes, RdbFile* out);

  // The next key: true with *key (and *filter for a RedisBloom key that
  // decoded), false at the end (status ok) or when the file is damaged
  // (*status says where). A RedisBloom value refused for its contents or for
  // the limits is reported in key->decode_error and reading goes on.
  bool Next(const FilterLimits& limits, MemoryBudget* budget, RdbKey* key, AnyFilter* filter,
            Status* status);

  int version() const { return version_; }
  uint64_t offset() const { return reader_.offset(); }
  uint64_t size() const { return size_; }

 private:
  bool SkipValue(uint8_t type);
  bool SkipStream(uint8_t type);

  rdb::RdbReader reader_{std::string_view()};
  uint64_t size_ = 0;
  int version_ = 0;
  uint64_t db_ = 0;
};

}  // namespace bloomgate
