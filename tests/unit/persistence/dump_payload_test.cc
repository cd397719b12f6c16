// DUMP payloads refused: every damage, truncation, foreign or future
// version is refused with the error RESTORE maps to Redis's "DUMP payload
// version or checksum are wrong", leaves the output alone and keeps nothing
// reserved. The round trip of every family is in codec_registry_test.
#include "persistence/dump_payload.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <string>

#include "persistence/byte_io.h"
#include "persistence/filter_codec.h"
#include "tests/unit/filters/filter_test_support.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;

std::string CuckooDump() {
  CuckooFilterOptions options;
  options.capacity = 64;
  std::unique_ptr<CuckooFilter> f;
  EXPECT_EQ(CuckooFilter::Create(options, FilterLimits{}, nullptr, &f), FilterStatus::kOk);
  for (uint64_t i = 0; i < 40; ++i) (void)f->Add(ItemHash("item", i));
  return EncodeDumpPayload(AnyFilter(std::move(f)));
}

// Re-seals `payload` after an edit, so the edit reaches the decoder behind
// the checksum.
void ResealPayload(std::string* payload) {
  payload->resize(payload->size() - 8);
  const uint64_t sum = XXH64(payload->data(), payload->size(), 0);
  ByteWriter(payload).PutU64(sum);
}

DumpPayloadError Decode(std::string_view payload, MemoryBudget* budget) {
  AnyFilter out;
  DumpPayloadError error = DecodeDumpPayload(payload, FilterLimits{}, budget, &out);
  EXPECT_EQ(std::visit([](const auto& f) { return f != nullptr; }, out),
            error == DumpPayloadError::kNone);
  return error;
}

TEST(DumpPayload, EveryFlippedByteIsRefused) {
  const std::string good = CuckooDump();
  MemoryBudget budget(0);
  ASSERT_EQ(Decode(good, &budget), DumpPayloadError::kNone);
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    ASSERT_EQ(Decode(bad, &budget), DumpPayloadError::kVersionOrChecksum) << "byte " << i;
  }
  EXPECT_EQ(budget.used(), 0u);
}

TEST(DumpPayload, EveryTruncationIsRefused) {
  const std::string good = CuckooDump();
  MemoryBudget budget(0);
  for (size_t n = 0; n < good.size(); ++n) {
    ASSERT_EQ(Decode(std::string_view(good).substr(0, n), &budget),
              DumpPayloadError::kVersionOrChecksum)
        << n << " bytes";
  }
  EXPECT_EQ(Decode(good + "x", &budget), DumpPayloadError::kVersionOrChecksum);
  EXPECT_EQ(budget.used(), 0u);
}

TEST(DumpPayload, AnotherVersionIsRefusedEvenWithAGoodChecksum) {
  std::string future = CuckooDump();
  future[4] = static_cast<char>(kDumpPayloadVersion + 1);
  ResealPayload(&future);
  MemoryBudget budget(0);
  EXPECT_EQ(Decode(future, &budget), DumpPayloadError::kVersionOrChecksum);
}

TEST(DumpPayload, ARedisPayloadIsRefused) {
  // Shaped like a Redis DUMP: a type byte, a string, then Redis's footer of
  // a 2-byte RDB version (11) and an 8-byte CRC-64.
  const std::string redis("\x00\x05hello\x0b\x00\xb3\x80\x8e\xba\x31\xb2\x43\xbb", 17);
  MemoryBudget budget(0);
  EXPECT_EQ(Decode(redis, &budget), DumpPayloadError::kVersionOrChecksum);
}

TEST(DumpPayload, SealedNonsenseIsBadDataAndAllocatesNothing) {
  const std::string good = CuckooDump();
  MemoryBudget budget(0);
  // A payload length that claims more than is there (the loader must not
  // allocate from it), an unknown kind, and a header field out of range.
  std::string longer = good;
  const size_t header_length = static_cast<uint8_t>(good[7]) | static_cast<uint8_t>(good[8]) << 8;
  longer[11 + header_length + 5] = '\x7f';
  ResealPayload(&longer);
  EXPECT_EQ(Decode(longer, &budget), DumpPayloadError::kBadData);
  std::string kind = good;
  kind[6] = '\x7e';
  ResealPayload(&kind);
  EXPECT_EQ(Decode(kind, &budget), DumpPayloadError::kBadData);
  for (size_t i = 11; i < 11 + header_length; ++i) {
    std::string header = good;
    header[i] = '\xff';
    ResealPayload(&header);
    AnyFilter out;
    DumpPayloadError error = DecodeDumpPayload(header, FilterLimits{}, &budget, &out);
    // Some header bytes (an item count, a seed) take any value; the rest
    // must be refused as bad data, never as a checksum error.
    EXPECT_NE(error, DumpPayloadError::kVersionOrChecksum) << "header byte " << i;
  }
  EXPECT_EQ(budget.used(), 0u);
}

TEST(DumpPayload, AFilterThatDoesNotFitTheBudgetIsOutOfMemory) {
  const std::string good = CuckooDump();
  MemoryBudget budget(/*limit_bytes=*/16);
  EXPECT_EQ(Decode(good, &budget), DumpPayloadError::kOutOfMemory);
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace bloomgate

namespace bloomgate {
namespace {

std::string Streamed(const AnyFilter& filter, size_t* pieces) {
  DumpPayloadStream stream(filter);
  std::string out;
  std::string piece;
  *pieces = 0;
  while (stream.Next(&piece)) {
    EXPECT_LE(piece.size(), DumpPayloadStream::kPieceBytes);
    out += piece;
    ++*pieces;
  }
  EXPECT_EQ(out.size(), stream.size());
  EXPECT_FALSE(stream.Next(&piece));
  EXPECT_TRUE(piece.empty());
  return out;
}

// MIGRATE streams the payload it would otherwise encode whole: the bytes
// must be EncodeDumpPayload's, for a payload of one piece and of several
// (a 10 MiB Bloom filter: framing, three 4 MiB pieces at most, checksum).
TEST(DumpPayloadStream, HandsOutEncodeDumpPayloadsBytesInBoundedPieces) {
  std::unique_ptr<ScalableBloomFilter> big;
  ASSERT_EQ(ScalableBloomFilter::Create(ScalableBloomOptions{0.01, 8'000'000, 2}, FilterLimits{},
                                        nullptr, &big),
            FilterStatus::kOk);
  bool added = false;
  for (uint64_t i = 0; i < 1000; ++i) (void)big->Add(ItemHash("streamed", i), &added);
  const AnyFilter bloom(std::move(big));
  size_t pieces = 0;
  const std::string streamed = Streamed(bloom, &pieces);
  EXPECT_EQ(streamed, EncodeDumpPayload(bloom));
  EXPECT_GE(pieces, 5u);  // framing, >= 3 payload pieces, checksum

  const std::string small = CuckooDump();
  AnyFilter cuckoo;
  ASSERT_EQ(DecodeDumpPayload(small, FilterLimits{}, nullptr, &cuckoo), DumpPayloadError::kNone);
  EXPECT_EQ(Streamed(cuckoo, &pieces), small);
  EXPECT_EQ(pieces, 3u);
}

}  // namespace
}  // namespace bloomgate
