// BF.MERGE's op (server/commands/bloom/bloom_merge.h) as a value: the union,
// its item estimate, the refusals naming the first mismatch, and that a
// refusal changes nothing.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "filters/counting_bloom_filter.h"
#include "filters/scalable_bloom_filter.h"
#include "filters/windowed_bloom_filter.h"
#include "filters/windowed_counting_bloom_filter.h"
#include "server/base/clock.h"
#include "server/commands/bloom/bloom_merge.h"
#include "server/commands/bloom/bloom_ops.h"
#include "server/commands/counting_bloom/counting_bloom_ops.h"
#include "server/commands/errors.h"
#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

class BloomMerge : public ::testing::Test {
 protected:
  BloomMerge() : server_(MakeServer()) {}

  FilterStore Store() { return StoreOf(*server_, session_, NowMs(), /*write=*/true); }

  ScalableBloomFilter& Reserve(std::string_view key, BloomParams params) {
    FilterStore store = Store();
    EXPECT_EQ(ReserveBloom(store, MakeKeyRef(key), params), BloomStatus::kOk);
    return *server_->keyspace.Find(std::string(key), NowMs())->bloom();
  }

  static void Add(ScalableBloomFilter& filter, std::string_view prefix, int n) {
    for (int i = 0; i < n; ++i) {
      bool added = false;
      ASSERT_EQ(filter.Add(filter.Hash(std::string(prefix) + std::to_string(i)), &added),
                FilterStatus::kOk);
    }
  }

  MergeResult Merge(std::string_view dest, std::vector<std::string_view> sources) {
    std::vector<KeyRef> refs;
    for (std::string_view s : sources) refs.push_back(MakeKeyRef(s));
    FilterStore store = Store();
    return MergeBloom(store, MakeKeyRef(dest), refs);
  }

  static std::vector<uint64_t> Words(const ScalableBloomFilter& filter) {
    std::vector<uint64_t> words;
    for (uint32_t l = 0; l < filter.num_layers(); ++l) {
      const BloomLayer& layer = filter.layer(l);
      for (uint64_t w = 0; w < layer.num_words(); ++w) words.push_back(layer.words()[w].load());
    }
    return words;
  }

  std::unique_ptr<ServerContext> server_;
  JournalSession session_;
};

constexpr BloomParams kParams{.error_rate = 0.01, .capacity = 1000, .seed = 99};

TEST_F(BloomMerge, UnionHoldsEveryItemAndCountsTheBitsEstimate) {
  ScalableBloomFilter& a = Reserve("a", kParams);
  ScalableBloomFilter& b = Reserve("b", kParams);
  Add(a, "a", 400);
  Add(b, "b", 400);
  Add(b, "a", 100);  // 100 items both shards saw
  MergeResult result = Merge("all", {"a", "b"});
  ASSERT_EQ(result.status, BloomStatus::kOk) << MergeFailureText("BF.MERGE", result);
  const ScalableBloomFilter& all = *server_->keyspace.Find("all", NowMs())->bloom();
  EXPECT_EQ(all.hash_seed(), 99u);
  for (int i = 0; i < 400; ++i) {
    EXPECT_TRUE(all.MayContain(all.Hash("a" + std::to_string(i))));
    EXPECT_TRUE(all.MayContain(all.Hash("b" + std::to_string(i))));
  }
  // 800 distinct; the sum (900) would count the shared 100 twice.
  EXPECT_NEAR(static_cast<double>(all.items()), 800.0, 40.0);
  EXPECT_GE(all.items(), 400u);
  EXPECT_LE(all.items(), 900u);
}

TEST_F(BloomMerge, DestKeepsWhatItHeldAndMayBeASource) {
  ScalableBloomFilter& d = Reserve("d", kParams);
  ScalableBloomFilter& s = Reserve("s", kParams);
  Add(d, "d", 50);
  Add(s, "s", 50);
  ASSERT_EQ(Merge("d", {"d", "s"}).status, BloomStatus::kOk);
  EXPECT_TRUE(d.MayContain(d.Hash("d0")));
  EXPECT_TRUE(d.MayContain(d.Hash("s49")));
}

TEST_F(BloomMerge, MismatchesAreNamedAndChangeNothing) {
  ScalableBloomFilter& d = Reserve("d", kParams);
  Add(d, "d", 10);
  BloomParams other_seed = kParams;
  other_seed.seed = 100;
  Reserve("seed", other_seed);
  BloomParams other_rate = kParams;
  other_rate.error_rate = 0.001;
  Reserve("rate", other_rate);
  ScalableBloomFilter& grown = Reserve("grown", BloomParams{.capacity = 1000, .seed = 99});
  Add(grown, "g", 1500);  // a second layer
  ScalableBloomFilter& fine = Reserve("fine", kParams);
  Add(fine, "f", 10);
  const std::vector<uint64_t> before = Words(d);
  const uint64_t items = d.items();

  MergeResult result = Merge("d", {"fine", "seed"});
  EXPECT_EQ(result.status, BloomStatus::kMergeMismatch);
  EXPECT_EQ(MergeFailureText("BF.MERGE", result),
            "ERR BF.MERGE: seed has another seed, d has its own");
  EXPECT_EQ(MergeFailureText("BF.MERGE", Merge("d", {"rate"})),
            "ERR BF.MERGE: rate has error rate 0.001, d has 0.01");
  EXPECT_EQ(MergeFailureText("BF.MERGE", Merge("d", {"grown"})),
            "ERR BF.MERGE: grown has 2 layers, d has 1");
  EXPECT_EQ(Merge("d", {"fine", "missing"}).status, BloomStatus::kNotFound);
  EXPECT_EQ(Words(d), before) << "a refused merge ORs in no source, not even the good ones";
  EXPECT_EQ(d.items(), items);
  EXPECT_EQ(Merge("new", {"fine", "missing"}).status, BloomStatus::kNotFound);
  EXPECT_EQ(server_->keyspace.Find("new", NowMs()), nullptr) << "no dest created";
}

TEST_F(BloomMerge, ACreatedDestIsChargedToTheBudgetAndRefusedWhenItDoesNotFit) {
  Reserve("s", BloomParams{.error_rate = 0.01, .capacity = 100000, .seed = 5});
  FilterStore store = Store();
  store.limits.max_filter_bytes = 1024;  // far below the source's ~120 KB
  std::vector<KeyRef> sources{MakeKeyRef("s")};
  EXPECT_EQ(MergeBloom(store, MakeKeyRef("d"), sources).status,
            BloomStatus::kCreateFailed);
  EXPECT_EQ(server_->keyspace.Find("d", NowMs()), nullptr);
}

TEST_F(BloomMerge, AWindowedFilterAmongPlainOnesIsRefusedByName) {
  Reserve("d", kParams);
  // Reserved directly: Reserve() returns the scalable filter, which a
  // windowed key does not hold (UBSan: a reference to null).
  FilterStore store = Store();
  ASSERT_EQ(ReserveBloom(store, MakeKeyRef("w"), BloomParams{.window_ms = 10000, .generations = 2}),
            BloomStatus::kOk);
  MergeResult result = Merge("d", {"w"});
  EXPECT_EQ(result.status, BloomStatus::kMergeMismatch);
  EXPECT_EQ(MergeFailureText("BF.MERGE", result), "ERR BF.MERGE: w has a window, d has none");
}

TEST_F(BloomMerge, AFilterInRedisBloomsLayoutIsRefusedAsUnsupportedNotAsAMismatch) {
  Reserve("d", kParams);
  ScalableBloomOptions options;
  options.capacity = 100;
  options.hash_seed = 7;
  options.layout = BloomLayout::kRedisBloom;
  std::unique_ptr<ScalableBloomFilter> imported;
  ASSERT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, &imported),
            FilterStatus::kOk);
  server_->keyspace.Put("rb", std::make_shared<KeyEntry>(AnyFilter(std::move(imported))), 0);
  MergeResult result = Merge("d", {"rb"});
  EXPECT_EQ(result.status, BloomStatus::kMergeUnsupported) << ToString(result.status);
  EXPECT_EQ(MergeFailureText("BF.MERGE", result),
            "ERR BF.MERGE: rb is a filter in RedisBloom's layout, which BF.MERGE does not merge");
}

// A windowed result is journaled whole, so one that may pass a log record
// is refused as what it is, with the log's text, not as a mismatch.
TEST(MergeFailureText, TooLargeToLogIsItsOwnStatusWithTheLogsText) {
  MergeResult result{.status = BloomStatus::kTooLargeToLog};
  EXPECT_EQ(MergeFailureText("BF.MERGE", result), errors::kTooLargeToLog);
  EXPECT_EQ(ToString(BloomStatus::kTooLargeToLog), "too large to log");
}

TEST_F(BloomMerge, OneSeedAndOneSetOfItemsGiveIdenticalBits) {
  ScalableBloomFilter& p = Reserve("p", kParams);
  ScalableBloomFilter& q = Reserve("q", kParams);
  Add(p, "x", 300);
  Add(q, "x", 300);
  EXPECT_EQ(Words(p), Words(q));
  BloomParams other = kParams;
  other.seed = 7;
  ScalableBloomFilter& r = Reserve("r", other);
  Add(r, "x", 300);
  EXPECT_NE(Words(p), Words(r));
}

// --- CBF.MERGE ------------------------------------------------------------

class CountingMerge : public BloomMerge {
 protected:
  CountingBloomFilter& ReserveCbf(std::string_view key, BloomParams params) {
    FilterStore store = Store();
    EXPECT_EQ(ReserveCounting(store, MakeKeyRef(key), params), BloomStatus::kOk);
    return *server_->keyspace.Find(std::string(key), NowMs())->get<CountingBloomFilter>();
  }
  static void AddTimes(CountingBloomFilter& filter, std::string_view item, int times) {
    for (int i = 0; i < times; ++i) {
      bool was_new = false;
      ASSERT_EQ(filter.Add(filter.Hash(item), &was_new), FilterStatus::kOk);
    }
  }
  MergeResult MergeCbf(std::string_view dest, std::vector<std::string_view> sources) {
    std::vector<KeyRef> refs;
    for (std::string_view s : sources) refs.push_back(MakeKeyRef(s));
    FilterStore store = Store();
    return MergeCounting(store, MakeKeyRef(dest), refs);
  }
};

TEST_F(CountingMerge, CountersAndCountsAddAndSaturate) {
  CountingBloomFilter& a = ReserveCbf("a", kParams);
  CountingBloomFilter& b = ReserveCbf("b", kParams);
  AddTimes(a, "x", 2);
  AddTimes(b, "x", 3);
  AddTimes(a, "hot", 10);
  AddTimes(b, "hot", 10);  // 20 > 15, the 4-bit maximum
  AddTimes(b, "y", 1);
  ASSERT_EQ(MergeCbf("all", {"a", "b"}).status, BloomStatus::kOk);
  const CountingBloomFilter& all =
      *server_->keyspace.Find("all", NowMs())->get<CountingBloomFilter>();
  EXPECT_GE(all.Count(all.Hash("x")), 5u);
  EXPECT_EQ(all.Count(all.Hash("hot")), 15u) << "saturated, never wrapped";
  EXPECT_GE(all.Count(all.Hash("y")), 1u);
  EXPECT_EQ(all.items(), a.items() + b.items());
  EXPECT_GT(all.saturated_counters(), 0u);
  // dest named as a source is not added to itself.
  const uint64_t before = a.Count(a.Hash("x"));
  ASSERT_EQ(MergeCbf("a", {"a"}).status, BloomStatus::kOk);
  EXPECT_EQ(a.Count(a.Hash("x")), before);
}

TEST_F(CountingMerge, CounterWidthAndSeedMismatchesAreRefused) {
  CountingBloomFilter& d = ReserveCbf("d", kParams);
  AddTimes(d, "x", 1);
  BloomParams wide = kParams;
  wide.counter_bits = 8;
  ReserveCbf("wide", wide);
  BloomParams other = kParams;
  other.seed = 1;
  ReserveCbf("other", other);
  Reserve("bloom", kParams);
  EXPECT_EQ(MergeFailureText("CBF.MERGE", MergeCbf("d", {"wide"})),
            "ERR CBF.MERGE: wide has counter bits 8, d has 4");
  EXPECT_EQ(MergeFailureText("CBF.MERGE", MergeCbf("d", {"other"})),
            "ERR CBF.MERGE: other has another seed, d has its own");
  EXPECT_EQ(MergeCbf("d", {"bloom"}).status, BloomStatus::kWrongType);
  EXPECT_EQ(d.Count(d.Hash("x")), 1u);
  EXPECT_EQ(d.items(), 1u);
}


// ---------------------------------------------------------------------------
// Windowed filters, on an injected window clock.

int64_t window_now = 0;
int64_t TestWindowClock() { return window_now; }

class WindowedMerge : public BloomMerge {
 protected:
  static constexpr int64_t kT = 1'000'000;
  WindowedMerge() {
    window_now = kT;
    SetWindowClockForTesting(TestWindowClock);
  }
  ~WindowedMerge() override { SetWindowClockForTesting(nullptr); }

  // A window of 4 s in 2 generations (2 s each), seed 7, created at the clock's now.
  void ReserveWindowed(std::string_view key, bool counting = false, uint64_t window_ms = 4000) {
    FilterStore store = Store();
    const BloomParams params{.capacity = 1000, .window_ms = window_ms, .generations = 2, .seed = 7};
    ASSERT_EQ(counting ? ReserveCounting(store, MakeKeyRef(key), params)
                       : ReserveBloom(store, MakeKeyRef(key), params),
              BloomStatus::kOk);
  }
  WindowedBloomFilter& Windowed(std::string_view key) {
    return *server_->keyspace.Find(std::string(key), NowMs())->get<WindowedBloomFilter>();
  }
  WindowedCountingBloomFilter& WindowedCounting(std::string_view key) {
    return *server_->keyspace.Find(std::string(key), NowMs())->get<WindowedCountingBloomFilter>();
  }
  void AddAt(std::string_view key, std::string_view item, int64_t at) {
    WindowedBloomFilter& f = Windowed(key);
    bool seen = false, flipped = false;
    uint64_t g = 0;
    ASSERT_EQ(f.Add(f.Hash(item), at, &seen, &g, &flipped), FilterStatus::kOk);
  }
  static bool Has(const WindowedBloomFilter& f, std::string_view item, int64_t at) {
    return f.MayContain(f.Hash(item), at);
  }
};

TEST_F(WindowedMerge, GenerationsMergeByOffsetIntoANewDest) {
  ReserveWindowed("wa");
  ReserveWindowed("wb");
  AddAt("wa", "a-old", kT);         // generation 0
  AddAt("wb", "b-old", kT + 100);
  AddAt("wa", "a-new", kT + 2500);  // generation 1
  AddAt("wb", "b-new", kT + 2600);
  window_now = kT + 2700;
  MergeResult result = Merge("all", {"wa", "wb"});
  ASSERT_EQ(result.status, BloomStatus::kOk) << MergeFailureText("BF.MERGE", result);
  EXPECT_TRUE(result.journaled) << "the result is logged whole, not the command";
  const WindowedBloomFilter& all = Windowed("all");
  for (const char* item : {"a-old", "b-old", "a-new", "b-new"}) {
    EXPECT_TRUE(Has(all, item, window_now)) << item;
  }
  EXPECT_EQ(all.ItemsAt(window_now), 4u);  // BF.CARD over the union
  // Generation 0 is dropped when generation 3 begins (kT + 6000): its items
  // age out of the merge exactly as out of the inputs.
  EXPECT_FALSE(Has(all, "a-old", kT + 6000));
  EXPECT_FALSE(Has(all, "b-old", kT + 6000));
  EXPECT_TRUE(Has(all, "b-new", kT + 6000));
  EXPECT_TRUE(Has(Windowed("wb"), "b-new", kT + 6000));
  EXPECT_FALSE(Has(Windowed("wa"), "b-new", window_now)) << "sources are left as they were";
}

TEST_F(WindowedMerge, AnExistingDestGetsTheGenerationsItLacked) {
  ReserveWindowed("d");
  ReserveWindowed("s");
  AddAt("s", "s-old", kT);
  AddAt("d", "d-new", kT + 2100);  // d has no generation 0 item, s none in 1
  AddAt("s", "s-new2", kT + 2200);
  window_now = kT + 2300;
  ASSERT_EQ(Merge("d", {"s"}).status, BloomStatus::kOk);
  const WindowedBloomFilter& d = Windowed("d");
  EXPECT_TRUE(Has(d, "s-old", window_now));
  EXPECT_TRUE(Has(d, "s-new2", window_now));
  EXPECT_TRUE(Has(d, "d-new", window_now));
}

TEST_F(WindowedMerge, MismatchesAreNamedAndChangeNothing) {
  ReserveWindowed("wa");
  AddAt("wa", "x", kT);
  // A filter whose generations start 500 ms off wa's: reserves align to
  // whole periods, so this one comes from elsewhere (an older snapshot, a
  // RESTORE) and is rebuilt here with its own origin.
  {
    WindowedBloomOptions o;
    o.capacity = 1000;
    o.window_ms = 4000;
    o.generations = 2;
    o.hash_seed = 7;
    ScalableBloomOptions g;
    g.error_rate = WindowedBloomFilter::GenerationErrorRate(0.01, 2);
    g.capacity = WindowedBloomFilter::GenerationCapacity(1000, 2);
    g.hash_seed = 7;
    std::vector<WindowedBloomFilter::RestoredSlot> slots(3);
    ASSERT_EQ(ScalableBloomFilter::Create(g, FilterLimits{}, nullptr, &slots[0].filter),
              FilterStatus::kOk);
    std::unique_ptr<WindowedBloomFilter> late;
    ASSERT_EQ(WindowedBloomFilter::Restore(o, kT + 500, 0, std::move(slots), FilterLimits{},
                                           nullptr, &late),
              FilterStatus::kOk);
    server_->keyspace.Put("late", std::make_shared<KeyEntry>(AnyFilter(std::move(late))), 0);
  }
  window_now = kT + 500;
  ReserveWindowed("long", /*counting=*/false, /*window_ms=*/6000);
  Reserve("plain", BloomParams{.capacity = 1000, .seed = 7});
  EXPECT_EQ(MergeFailureText("BF.MERGE", Merge("wa", {"late"})),
            "ERR BF.MERGE: late has its current generation starting at 1000500 ms, wa has "
            "1000000 ms");
  EXPECT_EQ(MergeFailureText("BF.MERGE", Merge("wa", {"long"})),
            "ERR BF.MERGE: long has window 6000 ms, wa has 4000 ms");
  EXPECT_EQ(MergeFailureText("BF.MERGE", Merge("wa", {"plain"})),
            "ERR BF.MERGE: plain has no window, wa has one");
  EXPECT_EQ(MergeFailureText("BF.MERGE", Merge("plain", {"wa"})),
            "ERR BF.MERGE: wa has a window, plain has none");
  EXPECT_EQ(Merge("new", {"wa", "late"}).status, BloomStatus::kMergeMismatch);
  EXPECT_EQ(server_->keyspace.Find("new", NowMs()), nullptr) << "no dest created";
  EXPECT_EQ(Windowed("wa").ItemsAt(window_now), 1u);
  EXPECT_FALSE(Has(Windowed("late"), "x", window_now));
}

TEST_F(WindowedMerge, CountingGenerationsAddTheirCounts) {
  ReserveWindowed("ca", /*counting=*/true);
  ReserveWindowed("cb", /*counting=*/true);
  auto incr = [&](std::string_view key, std::string_view item, int64_t at) {
    WindowedCountingBloomFilter& f = WindowedCounting(key);
    bool was_new = false;
    uint64_t count = 0, g = 0;
    ASSERT_EQ(f.Add(f.Hash(item), at, &was_new, &count, &g), FilterStatus::kOk);
  };
  incr("ca", "x", kT);
  incr("ca", "x", kT + 2100);
  incr("cb", "x", kT + 10);
  window_now = kT + 2200;
  std::vector<KeyRef> sources{MakeKeyRef("cb"), MakeKeyRef("cb")};  // named twice: once
  FilterStore store = Store();
  MergeResult result = MergeCounting(store, MakeKeyRef("ca"), sources);
  ASSERT_EQ(result.status, BloomStatus::kOk) << MergeFailureText("CBF.MERGE", result);
  const WindowedCountingBloomFilter& ca = WindowedCounting("ca");
  EXPECT_EQ(ca.Count(ca.Hash("x"), window_now), 3u);
  EXPECT_EQ(ca.Count(ca.Hash("x"), kT + 6000), 1u);  // generation 0's two aged out
  ReserveWindowed("cc", /*counting=*/true, /*window_ms=*/6000);
  EXPECT_EQ(MergeFailureText("CBF.MERGE", MergeCounting(store, MakeKeyRef("ca"),
                                                       std::vector<KeyRef>{MakeKeyRef("cc")})),
            "ERR CBF.MERGE: cc has window 6000 ms, ca has 4000 ms");
}

}  // namespace
}  // namespace bloomgate
