// A DUMP payload put together from ordered pieces (RESTORE-CHUNK's staging):
// any cut gives EncodeDumpPayload's filter back; damage, a foreign payload,
// bytes past the end, the per-filter limit and the memory budget are refused
// with RESTORE's errors, and nothing stays reserved once it is dropped.
#include "persistence/dump_payload_assembly.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "persistence/dump_payload.h"
#include "tests/unit/filters/filter_test_support.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;

AnyFilter Bloom(uint64_t capacity) {
  std::unique_ptr<ScalableBloomFilter> f;
  EXPECT_EQ(ScalableBloomFilter::Create(ScalableBloomOptions{0.01, capacity, 2}, FilterLimits{},
                                        nullptr, &f),
            FilterStatus::kOk);
  bool added = false;
  for (uint64_t i = 0; i < 200; ++i) (void)f->Add(ItemHash("assembled", i), &added);
  return f;
}

AnyFilter Cuckoo() {
  CuckooFilterOptions options;
  options.capacity = 1000;
  std::unique_ptr<CuckooFilter> f;
  EXPECT_EQ(CuckooFilter::Create(options, FilterLimits{}, nullptr, &f), FilterStatus::kOk);
  for (uint64_t i = 0; i < 300; ++i) (void)f->Add(ItemHash("assembled", i));
  return f;
}

DumpPayloadError Assemble(std::string_view payload, size_t cut, MemoryBudget* budget,
                          AnyFilter* out, const FilterLimits& limits = FilterLimits{}) {
  DumpPayloadAssembly assembly(limits, budget);
  for (size_t at = 0; at < payload.size(); at += cut) {
    const DumpPayloadError error = assembly.Append(payload.substr(at, cut));
    if (error != DumpPayloadError::kNone) return error;
    EXPECT_EQ(assembly.received(), std::min(payload.size(), at + cut));
  }
  EXPECT_TRUE(assembly.complete());
  return assembly.Finish(out);
}

TEST(DumpPayloadAssembly, AnyCutRebuildsTheFilterOfEveryPayload) {
  for (const AnyFilter& filter : {Bloom(5000), Cuckoo()}) {
    const std::string payload = EncodeDumpPayload(filter);
    for (size_t cut : {size_t{1}, size_t{7}, size_t{64}, size_t{1000}, payload.size()}) {
      MemoryBudget budget(0);
      AnyFilter out;
      ASSERT_EQ(Assemble(payload, cut, &budget, &out), DumpPayloadError::kNone) << cut;
      EXPECT_EQ(EncodeDumpPayload(out), payload) << cut;
      EXPECT_GT(budget.used(), 0u);
    }
  }
}

TEST(DumpPayloadAssembly, DamageAnywhereIsRefusedAndReleasesItsReservation) {
  const std::string good = EncodeDumpPayload(Cuckoo());
  MemoryBudget budget(0);
  for (size_t i = 0; i < good.size(); i += 13) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x41);
    AnyFilter out;
    EXPECT_NE(Assemble(bad, 100, &budget, &out), DumpPayloadError::kNone) << "byte " << i;
    EXPECT_EQ(budget.used(), 0u) << "byte " << i;
  }
}

TEST(DumpPayloadAssembly, BytesPastTheEndOrAnUnfinishedPayloadAreRefused) {
  const std::string good = EncodeDumpPayload(Cuckoo());
  MemoryBudget budget(0);
  AnyFilter out;
  {
    DumpPayloadAssembly assembly(FilterLimits{}, &budget);
    ASSERT_EQ(assembly.Append(good), DumpPayloadError::kNone);
    EXPECT_EQ(assembly.Append("x"), DumpPayloadError::kBadData);
  }
  {
    DumpPayloadAssembly assembly(FilterLimits{}, &budget);
    ASSERT_EQ(assembly.Append(std::string_view(good).substr(0, good.size() - 1)),
              DumpPayloadError::kNone);
    EXPECT_FALSE(assembly.complete());
    EXPECT_EQ(assembly.Finish(&out), DumpPayloadError::kVersionOrChecksum);
  }
  EXPECT_EQ(budget.used(), 0u);
}

TEST(DumpPayloadAssembly, AForeignPayloadIsRefusedAtItsFirstBytes) {
  DumpPayloadAssembly assembly(FilterLimits{}, nullptr);
  EXPECT_EQ(assembly.Append("\x07\x01not ours at all, a Redis payload"),
            DumpPayloadError::kVersionOrChecksum);
}

TEST(DumpPayloadAssembly, TheLimitAndTheBudgetAreCheckedOnceTheHeaderIsIn) {
  const std::string payload = EncodeDumpPayload(Bloom(100'000));  // ~120 KB of bits
  AnyFilter out;
  MemoryBudget small(4096);
  EXPECT_EQ(Assemble(payload, 50, &small, &out), DumpPayloadError::kOutOfMemory);
  EXPECT_EQ(small.used(), 0u);
  FilterLimits limits;
  limits.max_filter_bytes = 4096;
  MemoryBudget budget(0);
  EXPECT_EQ(Assemble(payload, 50, &budget, &out, limits), DumpPayloadError::kFilterTooLarge);
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace bloomgate
