#include "persistence/redis_dump_payload.h"

#include "persistence/crc64_jones.h"
#include "persistence/rdb_encoding.h"
#include "persistence/redisbloom_module_value.h"

namespace bloomgate {
namespace {

constexpr size_t kFooterBytes = 10;  // u16 RDB version + u64 CRC

uint64_t ReadLe(std::string_view bytes) {
  uint64_t v = 0;
  for (size_t i = bytes.size(); i-- > 0;) v = (v << 8) | static_cast<uint8_t>(bytes[i]);
  return v;
}

DumpPayloadError Refuse(DumpPayloadError error, std::string* why, std::string message) {
  if (why != nullptr) *why = std::move(message);
  return error;
}

}  // namespace

std::string FrameRedisDumpPayload(std::string_view value, uint16_t rdb_version) {
  std::string out;
  out.reserve(1 + value.size() + kFooterBytes);
  out.push_back(static_cast<char>(rdb::kTypeModule2));
  out.append(value);
  out.push_back(static_cast<char>(rdb_version & 0xff));
  out.push_back(static_cast<char>(rdb_version >> 8));
  const uint64_t crc = Crc64Jones(0, out);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(crc >> (8 * i)));
  return out;
}

DumpPayloadError DecodeRedisDumpPayload(std::string_view payload, const FilterLimits& limits,
                                        MemoryBudget* budget, AnyFilter* out, std::string* why) {
  using E = DumpPayloadError;
  if (payload.size() < kFooterBytes + 1) {
    return Refuse(E::kVersionOrChecksum, why, "payload shorter than Redis's DUMP framing");
  }
  const std::string_view footer = payload.substr(payload.size() - kFooterBytes);
  const uint64_t version = ReadLe(footer.substr(0, 2));
  if (version < kMinRedisDumpRdbVersion || version > kMaxRedisDumpRdbVersion) {
    return Refuse(E::kVersionOrChecksum, why,
                  "RDB version " + std::to_string(version) + " (Redis 7.0-7.4 dump 10-12)");
  }
  if (ReadLe(footer.substr(2)) != Crc64Jones(0, payload.substr(0, payload.size() - 8))) {
    return Refuse(E::kVersionOrChecksum, why, "CRC-64 mismatch");
  }
  rdb::RdbReader reader(payload.substr(0, payload.size() - kFooterBytes));
  uint8_t type = 0;
  uint64_t id = 0;
  if (!reader.Byte(&type) || type != rdb::kTypeModule2) {
    return Refuse(E::kBadData, why,
                  "a Redis " + rdb::TypeName(type) + " value, not a RedisBloom module value");
  }
  if (!reader.Length(&id)) return Refuse(E::kBadData, why, reader.error());
  std::string name;
  uint32_t encver = 0;
  rdb::DecodeModuleId(id, &name, &encver);
  if (!IsRedisBloomModuleType(name)) {
    return Refuse(E::kBadData, why, "module type " + name + " is not one of RedisBloom's");
  }
  AnyFilter filter;
  const E error = DecodeRedisBloomValue(name, encver, &reader, limits, budget, &filter, why);
  if (error != E::kNone) return error;
  if (!reader.at_end()) {
    return Refuse(E::kBadData, why,
                  std::to_string(payload.size() - kFooterBytes - reader.offset()) +
                      " bytes after the value");
  }
  *out = std::move(filter);
  return E::kNone;
}

}  // namespace bloomgate
