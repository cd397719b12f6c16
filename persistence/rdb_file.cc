#include "persistence/rdb_file.h"

#include "persistence/crc64_jones.h"
#include "persistence/redisbloom_module_value.h"

namespace bloomgate {
namespace {

constexpr std::string_view kMagic = "REDIS";
constexpr size_t kHeaderBytes = 9;    // "REDIS" + 4 digits
constexpr size_t kTrailerBytes = 9;   // EOF opcode + u64 checksum
// Keys, names and other strings we only keep for messages: no Redis key
// is larger than proto-max-bulk-len's 512 MB.
constexpr uint64_t kMaxKeyBytes = 512ull << 20;

}  // namespace

Status RdbFile::Open(std::string_view bytes, RdbFile* out) {
  if (bytes.size() < kHeaderBytes + kTrailerBytes || !bytes.starts_with(kMagic)) {
    return Status::Error("not an RDB file (no REDIS magic)");
  }
  int version = 0;
  for (size_t i = kMagic.size(); i < kHeaderBytes; ++i) {
    const char c = bytes[i];
    if (c < '0' || c > '9') return Status::Error("not an RDB file (version is not 4 digits)");
    version = version * 10 + (c - '0');
  }
  if (version < kMinRdbFileVersion || version > kMaxRdbFileVersion) {
    return Status::Error("RDB version " + std::to_string(version) +
                         " (read: 9-12, written by Redis 6.0-7.4)");
  }
  const std::string_view trailer = bytes.substr(bytes.size() - kTrailerBytes);
  if (static_cast<uint8_t>(trailer[0]) != rdb::kOpEof) {
    return Status::Error("truncated: the file does not end with the EOF opcode and checksum");
  }
  uint64_t stored = 0;
  for (size_t i = 8; i >= 1; --i) stored = (stored << 8) | static_cast<uint8_t>(trailer[i]);
  if (stored != 0) {
    const uint64_t computed = Crc64Jones(0, bytes.substr(0, bytes.size() - 8));
    if (computed != stored) {
      return Status::Error("checksum mismatch (the file is damaged or cut): stored " +
                           std::to_string(stored) + ", computed " + std::to_string(computed));
    }
  }
  out->reader_ = rdb::RdbReader(bytes.substr(0, bytes.size() - 8));
  std::string_view header;
  (void)out->reader_.Raw(kHeaderBytes, &header);
  out->size_ = bytes.size();
  out->version_ = version;
  out->db_ = 0;
  return Status::Ok();
}

bool RdbFile::Next(const FilterLimits& limits, MemoryBudget* budget, RdbKey* key,
                   AnyFilter* filter, Status* status) {
  rdb::RdbReader& r = reader_;
  *status = Status::Ok();
  int64_t expire_at_ms = 0;
  auto damaged = [&]() {
    *status = Status::Error(r.error());
    return false;
  };
  for (;;) {
    uint8_t op = 0;
    if (!r.Byte(&op)) return damaged();
    uint64_t a = 0, b = 0;
    std::string_view s;
    std::string scratch;
    switch (op) {
      case rdb::kOpEof:
        if (!r.at_end()) {
          r.Fail("EOF opcode before the end");
          return damaged();
        }
        return false;
      case rdb::kOpAux:
        if (!r.SkipString() || !r.SkipString()) return damaged();
        continue;
      case rdb::kOpModuleAux:
        if (!r.Length(&a) || !r.Length(&b)) return damaged();
        if (b != rdb::kModuleUint) {
          r.Fail("module aux data without its 'when' field");
          return damaged();
        }
        if (!r.Length(&b) || !r.SkipModuleValues()) return damaged();
        continue;
      case rdb::kOpFunction2:
        if (!r.SkipString()) return damaged();
        continue;
      case rdb::kOpFunctionPreGa:
        r.Fail("a Redis 7.0 release-candidate function (opcode 246)");
        return damaged();
      case rdb::kOpSelectDb:
        if (!r.Length(&db_)) return damaged();
        continue;
      case rdb::kOpResizeDb:
        if (!r.Length(&a) || !r.Length(&b)) return damaged();
        continue;
      case rdb::kOpSlotInfo:
        if (!r.Length(&a) || !r.Length(&a) || !r.Length(&a)) return damaged();
        continue;
      case rdb::kOpExpireTimeMs:
        if (!r.Millis(&expire_at_ms)) return damaged();
        continue;
      case rdb::kOpExpireTime: {
        int32_t seconds = 0;
        if (!r.Seconds(&seconds)) return damaged();
        expire_at_ms = int64_t{seconds} * 1000;
        continue;
      }
      case rdb::kOpIdle:
        if (!r.Length(&a)) return damaged();
        continue;
      case rdb::kOpFreq:
        if (!r.Byte(&op)) return damaged();
        continue;
      default: break;
    }
    // A key and its value.
    const uint8_t type = op;
    if (!r.String(kMaxKeyBytes, &s, &scratch)) return damaged();
    *key = RdbKey{};
    key->name.assign(s);
    key->db = db_;
    key->expire_at_ms = expire_at_ms;
    key->type = rdb::TypeName(type);
    if (type != rdb::kTypeModule2) {
      if (!SkipValue(type)) return damaged();
      return true;
    }
    uint64_t id = 0;
    if (!r.Length(&id)) return damaged();
    uint32_t encver = 0;
    rdb::DecodeModuleId(id, &key->type, &encver);
    key->redisbloom = IsRedisBloomModuleType(key->type);
    const uint64_t value_at = r.offset();
    if (key->redisbloom) {
      key->decode_error =
          DecodeRedisBloomValue(key->type, encver, &r, limits, budget, filter, &key->why);
      if (key->decode_error == DumpPayloadError::kNone) return true;
      r.Rewind(value_at);  // refused: step over it and go on
    }
    if (!r.SkipModuleValues()) return damaged();
    return true;
  }
}

bool RdbFile::SkipValue(uint8_t type) {
  rdb::RdbReader& r = reader_;
  uint64_t n = 0;
  std::string_view raw;
  switch (type) {
    case rdb::kTypeString:
    case rdb::kTypeHashZipmap: case rdb::kTypeListZiplist: case rdb::kTypeSetIntset:
    case rdb::kTypeZsetZiplist: case rdb::kTypeHashZiplist: case rdb::kTypeHashListpack:
    case rdb::kTypeZsetListpack: case rdb::kTypeSetListpack: case rdb::kTypeHashListpackExPreGa:
      return r.SkipString();
    case rdb::kTypeHashListpackEx:
      return r.Raw(8, &raw) && r.SkipString();  // the smallest field TTL, the listpack
    case rdb::kTypeList: case rdb::kTypeSet: case rdb::kTypeListQuicklist:
      if (!r.Length(&n)) return false;
      while (n-- > 0) {
        if (!r.SkipString()) return false;
      }
      return true;
    case rdb::kTypeListQuicklist2:
      if (!r.Length(&n)) return false;
      while (n-- > 0) {
        uint64_t container = 0;
        if (!r.Length(&container) || !r.SkipString()) return false;
      }
      return true;
    case rdb::kTypeZset: case rdb::kTypeZset2:
      if (!r.Length(&n)) return false;
      while (n-- > 0) {
        if (!r.SkipString()) return false;
        if (!(type == rdb::kTypeZset ? r.SkipTextDouble() : r.Raw(8, &raw))) return false;
      }
      return true;
    case rdb::kTypeHash:
      if (!r.Length(&n)) return false;
      while (n-- > 0) {
        if (!r.SkipString() || !r.SkipString()) return false;
      }
      return true;
    case rdb::kTypeHashMetadata: case rdb::kTypeHashMetadataPreGa:
      // 7.4: [the smallest TTL,] then per field its TTL (a length relative
      // to it, or 8 absolute bytes in the pre-GA form), field, value.
      if (type == rdb::kTypeHashMetadata && !r.Raw(8, &raw)) return false;
      if (!r.Length(&n)) return false;
      while (n-- > 0) {
        uint64_t ttl = 0;
        if (!(type == rdb::kTypeHashMetadata ? r.Length(&ttl) : r.Raw(8, &raw))) return false;
        if (!r.SkipString() || !r.SkipString()) return false;
      }
      return true;
    case rdb::kTypeStreamListpacks: case rdb::kTypeStreamListpacks2:
    case rdb::kTypeStreamListpacks3:
      return SkipStream(type);
    default:
      return r.Fail("value type " + std::to_string(type) + " (not written by Redis 6.0-7.4)");
  }
}

bool RdbFile::SkipStream(uint8_t type) {
  rdb::RdbReader& r = reader_;
  const bool v2 = type >= rdb::kTypeStreamListpacks2;
  const bool v3 = type >= rdb::kTypeStreamListpacks3;
  uint64_t n = 0, x = 0;
  std::string_view raw;
  if (!r.Length(&n)) return false;
  while (n-- > 0) {  // listpacks: the master ID, the listpack
    if (!r.SkipString() || !r.SkipString()) return false;
  }
  // length, last ID (ms, seq); v2: first ID, max deleted ID, entries added.
  for (int i = 0; i < (v2 ? 8 : 3); ++i) {
    if (!r.Length(&x)) return false;
  }
  uint64_t groups = 0;
  if (!r.Length(&groups)) return false;
  while (groups-- > 0) {
    if (!r.SkipString() || !r.Length(&x) || !r.Length(&x)) return false;  // name, last ID
    if (v2 && !r.Length(&x)) return false;                                 // entries read
    uint64_t pending = 0;
    if (!r.Length(&pending)) return false;
    while (pending-- > 0) {  // ID, delivery time, delivery count
      if (!r.Raw(16 + 8, &raw) || !r.Length(&x)) return false;
    }
    uint64_t consumers = 0;
    if (!r.Length(&consumers)) return false;
    while (consumers-- > 0) {  // name, seen time, [active time], its pending IDs
      if (!r.SkipString() || !r.Raw(v3 ? 16 : 8, &raw) || !r.Length(&pending)) return false;
      while (pending-- > 0) {
        if (!r.Raw(16, &raw)) return false;
      }
    }
  }
  return true;
}

}  // namespace bloomgate
