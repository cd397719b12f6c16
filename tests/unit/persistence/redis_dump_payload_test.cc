// RedisBloom's DUMP payloads (tests/data/redisbloom-sketches/dump-payloads.json,
// dumped by Redis 7.0.15 + RedisBloom 2.4.23): every one decodes into the
// family it names; every flipped byte and every truncation is refused as
// Redis refuses them ("DUMP payload version or checksum are wrong"); and
// every byte changed behind a re-computed checksum is decoded or refused
// without reading out of bounds or keeping memory reserved. The answers
// after RESTORE are compared in tests/e2e/test_redisbloom_restore.py.
#include "persistence/redis_dump_payload.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "filters/count_min_sketch.h"
#include "filters/t_digest.h"
#include "filters/top_k.h"
#include "persistence/crc64_jones.h"
#include "persistence/dump_payload.h"
#include "persistence/lzf.h"
#include "persistence/rdb_encoding.h"

namespace bloomgate {
namespace {

// The fixture's base64 (RFC 4648, padded), for test data only.
std::string Base64Decode(std::string_view in) {
  constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (const char c : in.substr(0, in.find('='))) {
    acc = (acc << 6) | static_cast<uint32_t>(kAlphabet.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

// module type -> payload, read from the fixture's "module_type" and
// "dump_base64" fields (each key's object lists module_type first).
std::map<std::string, std::string> Payloads() {
  std::ifstream in(std::string(BLOOMGATE_TEST_DATA_DIR) +
                   "/redisbloom-sketches/dump-payloads.json");
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  std::map<std::string, std::string> out;
  size_t at = 0;
  const std::string type_field = "\"module_type\": \"";
  const std::string dump_field = "\"dump_base64\": \"";
  while ((at = json.find(type_field, at)) != std::string::npos) {
    at += type_field.size();
    const std::string type = json.substr(at, json.find('"', at) - at);
    at = json.find(dump_field, at) + dump_field.size();
    out[type] = Base64Decode(json.substr(at, json.find('"', at) - at));
  }
  return out;
}

DumpPayloadError Decode(std::string_view payload, MemoryBudget* budget, AnyFilter* out,
                        std::string* why = nullptr) {
  DumpPayloadError error = DecodeDumpPayload(payload, FilterLimits{}, budget, out, why);
  EXPECT_EQ(std::visit([](const auto& f) { return f != nullptr; }, *out),
            error == DumpPayloadError::kNone);
  return error;
}

// The payload's module value re-framed at `version` with a fresh checksum.
std::string Reframe(const std::string& payload, uint16_t version) {
  return FrameRedisDumpPayload(std::string_view(payload).substr(1, payload.size() - 11), version);
}

TEST(Crc64Jones, MatchesRedisCheckValue) {
  EXPECT_EQ(Crc64Jones(0, "123456789"), 0xe9c6d914c4b8d9caULL);
}

TEST(Lzf, RefusesReferencesBeforeTheStartAndShortOutput) {
  std::string out;
  ASSERT_TRUE(LzfDecompress(std::string("\x02" "abc" "\x20\x02", 6), 6, &out));  // "abc" + 3 back
  EXPECT_EQ(out, "abcabc");
  EXPECT_FALSE(LzfDecompress(std::string("\x00" "a" "\x20\x05", 4), 4, &out));  // 6 back of 1
  EXPECT_FALSE(LzfDecompress(std::string("\x02" "abc", 4), 5, &out));          // short
  EXPECT_FALSE(LzfDecompress(std::string("\x05" "abc", 4), 6, &out));          // run past input
}

TEST(ModuleId, NamesAndEncversOfRedisBloomTypes) {
  std::string name;
  uint32_t encver = 0;
  const uint64_t id = rdb::EncodeModuleId("MBbloom--", 4);
  ASSERT_NE(id, 0u);
  rdb::DecodeModuleId(id, &name, &encver);
  EXPECT_EQ(name, "MBbloom--");
  EXPECT_EQ(encver, 4u);
  EXPECT_EQ(rdb::EncodeModuleId("MBbloom", 4), 0u);
}

TEST(RedisDumpPayload, EveryRedisBloomTypeDecodesIntoItsFamily) {
  const auto payloads = Payloads();
  ASSERT_EQ(payloads.size(), 5u);
  MemoryBudget budget(0);
  for (const auto& [type, payload] : payloads) {
    AnyFilter out;
    std::string why;
    ASSERT_EQ(Decode(payload, &budget, &out, &why), DumpPayloadError::kNone) << type << ": " << why;
    if (type == "CMSk-TYPE") {
      const auto& cms = *std::get<std::unique_ptr<CountMinSketch>>(out);
      EXPECT_EQ(cms.width(), 64u);
      EXPECT_EQ(cms.depth(), 4u);
      EXPECT_EQ(cms.total(), 200u);
      EXPECT_EQ(cms.scheme(), SketchScheme::kRedisBloom);
    } else if (type == "TopK-TYPE") {
      const auto& topk = *std::get<std::unique_ptr<TopK>>(out);
      EXPECT_EQ(topk.k(), 5u);
      EXPECT_EQ(topk.List().front().item, "w0");
      EXPECT_EQ(topk.List().front().count, 255u);
    } else if (type == "TDIS-TYPE") {
      const auto& digest = *std::get<std::unique_ptr<TDigest>>(out);
      EXPECT_EQ(digest.compression(), 100);
      EXPECT_EQ(digest.total_weight(), 1000);
    }
  }
  EXPECT_EQ(budget.used(), 0u);
}

TEST(RedisDumpPayload, EveryFlippedByteAndEveryTruncationIsRefused) {
  MemoryBudget budget(0);
  for (const auto& [type, good] : Payloads()) {
    for (size_t i = 0; i < good.size(); ++i) {
      for (const uint8_t mask : {0x01, 0x80, 0xff}) {
        std::string bad = good;
        bad[i] = static_cast<char>(bad[i] ^ mask);
        AnyFilter out;
        ASSERT_EQ(Decode(bad, &budget, &out), DumpPayloadError::kVersionOrChecksum)
            << type << " byte " << i;
      }
    }
    for (size_t n = 0; n < good.size(); ++n) {
      AnyFilter out;
      ASSERT_EQ(Decode(good.substr(0, n), &budget, &out), DumpPayloadError::kVersionOrChecksum)
          << type << " cut to " << n;
    }
  }
  EXPECT_EQ(budget.used(), 0u);
}

// Behind a valid checksum: each byte of the value set to a few values. The
// decoder must either build a filter or refuse, read nothing out of bounds
// (ASan and the sanitizer builds run this too) and keep nothing reserved.
TEST(RedisDumpPayload, DamageBehindAValidChecksumIsDecodedOrRefusedCleanly) {
  MemoryBudget budget(0);
  FilterLimits limits;
  limits.max_filter_bytes = 64u << 20;
  for (const auto& [type, good] : Payloads()) {
    const std::string value = good.substr(1, good.size() - 11);
    size_t refused = 0;
    for (size_t i = 0; i < value.size(); ++i) {
      for (const uint8_t to : {0x00, 0x7f, 0x81, 0xc3, 0xff}) {
        std::string edited = value;
        edited[i] = static_cast<char>(to);
        AnyFilter out;
        if (DecodeDumpPayload(FrameRedisDumpPayload(edited, 10), limits, &budget, &out) !=
            DumpPayloadError::kNone) {
          ++refused;
        }
      }
    }
    EXPECT_GT(refused, 0u) << type;  // bit arrays and counters take any byte; headers do not
  }
  EXPECT_EQ(budget.used(), 0u);
}

TEST(RedisDumpPayload, RdbVersionsOfRedis70To74AreAcceptedAndNoOthers) {
  const std::string good = Payloads().at("CMSk-TYPE");
  MemoryBudget budget(0);
  for (uint16_t version : {10, 11, 12}) {
    AnyFilter out;
    EXPECT_EQ(Decode(Reframe(good, version), &budget, &out), DumpPayloadError::kNone) << version;
  }
  for (uint16_t version : {0, 9, 13, 0x0a00}) {
    AnyFilter out;
    std::string why;
    EXPECT_EQ(Decode(Reframe(good, version), &budget, &out, &why),
              DumpPayloadError::kVersionOrChecksum)
        << version;
    EXPECT_NE(why.find("RDB version"), std::string::npos) << why;
  }
}

TEST(RedisDumpPayload, OtherTypesModulesAndTrailingBytesAreBadData) {
  MemoryBudget budget(0);
  AnyFilter out;
  std::string why;
  // A Redis string "hello" (RDB_TYPE_STRING 0), framed as DUMP frames it.
  std::string string_payload("\x00\x05hello\x0a\x00", 9);
  const uint64_t crc = Crc64Jones(0, string_payload);
  for (int i = 0; i < 8; ++i) string_payload.push_back(static_cast<char>(crc >> (8 * i)));
  EXPECT_EQ(Decode(string_payload, &budget, &out, &why), DumpPayloadError::kBadData);
  EXPECT_NE(why.find("string"), std::string::npos) << why;

  // Another module's type name.
  const std::string cms = Payloads().at("CMSk-TYPE");
  std::string value = cms.substr(1, cms.size() - 11);
  std::string other_id;
  {
    const uint64_t id = rdb::EncodeModuleId("ReJSON-RL", 3);
    other_id.push_back(static_cast<char>(0x81));
    for (int i = 7; i >= 0; --i) other_id.push_back(static_cast<char>(id >> (8 * i)));
  }
  EXPECT_EQ(Decode(FrameRedisDumpPayload(other_id + value.substr(9), 10), &budget, &out, &why),
            DumpPayloadError::kBadData);
  EXPECT_NE(why.find("ReJSON-RL"), std::string::npos) << why;

  // Bytes after the module value's EOF.
  EXPECT_EQ(Decode(FrameRedisDumpPayload(value + "x", 10), &budget, &out, &why),
            DumpPayloadError::kBadData);
  EXPECT_NE(why.find("after the value"), std::string::npos) << why;
  EXPECT_EQ(budget.used(), 0u);
}

TEST(RedisDumpPayload, AFilterOverTheLimitsIsRefusedAsSuch) {
  const std::string cms = Payloads().at("CMSk-TYPE");  // 64 x 4 cells
  AnyFilter out;
  FilterLimits small;
  small.max_filter_bytes = 512;
  EXPECT_EQ(DecodeDumpPayload(cms, small, nullptr, &out), DumpPayloadError::kFilterTooLarge);
  MemoryBudget tight(512);
  EXPECT_EQ(DecodeDumpPayload(cms, FilterLimits{}, &tight, &out), DumpPayloadError::kOutOfMemory);
  EXPECT_EQ(tight.used(), 0u);
}

}  // namespace
}  // namespace bloomgate
