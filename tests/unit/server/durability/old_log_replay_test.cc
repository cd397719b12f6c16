// Start-up over logs and snapshots that an older version wrote: records it
// acknowledged under the admission rules of its day must come back exactly,
// even where today's rules would refuse the client command (the cuckoo
// copies rule, the Bloom/CBF error-rate floor). Each log here is written
// with the project's own writer (AppendLogWriter, Encode*Record), holding
// what an older build journaled: a creation as a filter record, then the
// client commands as received.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "../../config/temp_dir.h"
#include "filters/counting_bloom_filter.h"
#include "filters/cuckoo_filter.h"
#include "filters/scalable_bloom_filter.h"
#include "persistence/append_log.h"
#include "persistence/filter_codec.h"
#include "server/commands/errors.h"
#include "server/commands/journal_applier.h"
#include "server/durability/durability.h"
#include "../durable_session.h"

namespace bloomgate::testing {
namespace {

using testutil::TempDir;

constexpr int64_t kTime = 1'700'000'000'000;  // any wall-clock reading of a live server

// One log file, generation 1, in `dir`, as an older build would have left it.
class OldLog {
 public:
  explicit OldLog(const TempDir& dir) {
    ServerConfig config;
    Status status = AppendLogWriter::Create(DefaultFileSystem(), dir.path().string(),
                                            config.appendfilename, /*generation=*/1, kTime,
                                            &writer_);
    EXPECT_TRUE(status.ok()) << status.message();
  }
  // A creation: the filter's header, no payload (it was all zeros).
  void Created(std::string_view key, AnyFilter filter) {
    std::string record;
    EncodeFilterRecord(kTime, key, DescribeFilter(filter), /*payload_source=*/nullptr, &record);
    sequence_ = writer_->Append(record);
  }
  void Command(const std::vector<std::string_view>& args) {
    std::string record;
    EncodeCommandRecord(kTime, args, &record);
    sequence_ = writer_->Append(record);
  }
  void Close() {
    EXPECT_TRUE(writer_->Flush(sequence_, /*sync=*/true).ok());
    EXPECT_TRUE(writer_->Close().ok());
  }

 private:
  std::unique_ptr<AppendLogWriter> writer_;
  uint64_t sequence_ = 0;
};

// A new filter of `Filter` made with `options`, as an older build created it.
template <typename Filter, typename Options>
AnyFilter Made(const Options& options) {
  std::unique_ptr<Filter> filter;
  EXPECT_EQ(Filter::Create(options, FilterLimits{}, nullptr, &filter), FilterStatus::kOk);
  return filter;
}

AnyFilter Cuckoo(uint64_t capacity, uint32_t expansion) {
  return Made<CuckooFilter>(CuckooFilterOptions{.capacity = capacity, .expansion = expansion});
}

template <typename Filter, typename Options>
AnyFilter BloomLike(double error_rate, uint64_t capacity) {
  Options options;
  options.error_rate = error_rate;
  options.capacity = capacity;
  return Made<Filter>(options);
}
constexpr auto CountingBloom = BloomLike<CountingBloomFilter, CountingBloomOptions>;
constexpr auto Bloom = BloomLike<ScalableBloomFilter, ScalableBloomOptions>;

// The count of sub-filters in CF.INFO's RESP2 reply.
int64_t CuckooSubFilters(Session& s, std::string_view key) {
  const std::string info = s.Run({"CF.INFO", std::string(key)});
  const size_t at = info.find("Number of filters\r\n:") + 20;
  return std::stoll(info.substr(at, info.find('\r', at) - at));
}

// An older build had no copies rule (filters/cuckoo_filter.h, "Deliberate
// difference 0"): 20 CF.ADD of one item into a 2-slot-bucket filter grew
// it to 5 sub-filters and each was acknowledged. Judged again by today's
// rule, every copy past the 8th was refused at start-up and lost (CF.COUNT
// 8), then a snapshot saved the smaller filter for good.
TEST(OldLogReplay, CopiesOfOneCuckooItemThatTheCopiesRuleRefusesTodayAllComeBack) {
  TempDir dir;
  {
    OldLog log(dir);
    log.Created("cf", Cuckoo(/*capacity=*/1024, /*expansion=*/2));
    for (int i = 0; i < 17; ++i) log.Command({"CF.ADD", "cf", "same"});
    log.Command({"CF.INSERT", "cf", "ITEMS", "same", "same", "same"});
    log.Close();
  }
  ServerConfig config = DurableConfigIn(dir, ServerConfig::AppendFsync::kAlways);
  // 5 sub-filters of 4 copies each, or one more for each sub-filter where
  // the random per-filter seed put both of the item's buckets on one (2
  // copies there): about 1 run in 400.
  int64_t sub_filters = 0;
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    EXPECT_EQ(s.Run({"CF.COUNT", "cf", "same"}), Int(20));
    sub_filters = CuckooSubFilters(s, "cf");
    EXPECT_GE(sub_filters, 5);
    // The state an older client made saves and loads back.
    ASSERT_EQ(RunDurably(*server, s, {"SAVE"}), kOk);
  }
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  EXPECT_EQ(s.Run({"CF.COUNT", "cf", "same"}), Int(20));
  EXPECT_EQ(CuckooSubFilters(s, "cf"), sub_filters);
  // A client of today is still judged: both newest sub-filters hold only
  // copies in this item's buckets.
  EXPECT_EQ(s.Run({"CF.ADD", "cf", "same"}), Err(errors::kCfCopiesFull));
}

// A log of this build: the copies the rule refused were never journaled (a
// failed CF.ADD writes no record, CF.INSERT's record is cut before the
// refused item), so replaying without the rule gives back the same filter.
TEST(OldLogReplay, CopiesThisBuildRefusedStayRefusedAfterReplay) {
  TempDir dir;
  std::string same_count, other_count;
  int64_t sub_filters = 0;
  ServerConfig config = DurableConfigIn(dir, ServerConfig::AppendFsync::kAlways);
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    ASSERT_EQ(RunDurably(*server, s, {"CF.RESERVE", "cf", "1024", "EXPANSION", "2"}), kOk);
    for (int i = 0; i < 12; ++i) RunDurably(*server, s, {"CF.ADD", "cf", "same"});
    const std::string insert =
        RunDurably(*server, s, {"CF.INSERT", "cf", "ITEMS", "other", "same", "other"});
    ASSERT_EQ(insert, Arr(2) + Int(1) + Err(errors::kCfCopiesFull));
    // 8 copies of "same" (two 2-slot buckets in each of two sub-filters),
    // fewer when "other" took a slot in one of its buckets: with a random
    // per-filter seed, about 1 run in 100.
    same_count = s.Run({"CF.COUNT", "cf", "same"});
    other_count = s.Run({"CF.COUNT", "cf", "other"});
    sub_filters = CuckooSubFilters(s, "cf");
    ASSERT_TRUE(same_count == Int(8) || same_count == Int(7) || same_count == Int(6))
        << same_count;
  }  // a crash: only the log remains
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  EXPECT_EQ(s.Run({"CF.COUNT", "cf", "same"}), same_count);
  EXPECT_EQ(s.Run({"CF.COUNT", "cf", "other"}), other_count);
  EXPECT_EQ(CuckooSubFilters(s, "cf"), sub_filters);
}

// Rates under kMinBloomErrorRate (1e-30) were accepted before the floor:
// BF.RESERVE and CBF.RESERVE at 1e-35 journaled their filters, and the adds
// that grew them. All of it loads, from the log and from a snapshot.
TEST(OldLogReplay, FiltersBelowTodaysErrorRateFloorLoadAndKeepGrowing) {
  TempDir dir;
  {
    OldLog log(dir);
    log.Created("cbf", CountingBloom(/*error_rate=*/1e-35, /*capacity=*/4));
    log.Created("bf", Bloom(/*error_rate=*/1e-35, /*capacity=*/4));
    for (int i = 0; i < 40; ++i) {
      const std::string item = "item:" + std::to_string(i);
      log.Command({"CBF.ADD", "cbf", item});
      log.Command({kBloomAddedEffect, "bf", "1", item});
    }
    log.Close();
  }
  ServerConfig config = DurableConfigIn(dir, ServerConfig::AppendFsync::kAlways);
  // Every item is there, and the snapshot gives back the replies the log
  // did. A CBF.COUNT is at least 1, not exactly 1: a layer grown for 4
  // items may count a later item it shares all cells with (about 1 run in
  // 400, from the random per-filter seed).
  const auto replies = [](Session& s) {
    std::vector<std::string> out;
    for (int i = 0; i < 40; ++i) {
      const std::string item = "item:" + std::to_string(i);
      out.push_back(s.Run({"CBF.COUNT", "cbf", item}));
      EXPECT_NE(out.back(), Int(0)) << item;
      EXPECT_EQ(s.Run({"BF.EXISTS", "bf", item}), Int(1)) << item;
    }
    EXPECT_EQ(s.Run({"BF.CARD", "bf"}), Int(40));
    return out;
  };
  std::vector<std::string> from_log;
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    from_log = replies(s);
    ASSERT_EQ(RunDurably(*server, s, {"SAVE"}), kOk);
  }
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  EXPECT_EQ(replies(s), from_log);
  EXPECT_EQ(s.Run({"CBF.RESERVE", "new", "1e-35", "4"}), Err(errors::kErrorRateFloor));
}

// Limits lowered since the log was written: a filter the log grew past
// today's max-filter-memory and a keyspace past today's maxmemory. Each
// write was acknowledged where it ran, so replay applies all of it, the
// growth included, from the log and from a snapshot saved of it, and only
// the clients of today are judged by the new limits.
TEST(OldLogReplay, WritesPastTodaysMemoryLimitsAllComeBack) {
  TempDir dir;
  constexpr int kItems = 3000;
  {
    OldLog log(dir);
    log.Created("cbf", CountingBloom(/*error_rate=*/0.01, /*capacity=*/100));
    log.Created("bf", Bloom(/*error_rate=*/0.01, /*capacity=*/100));
    log.Created("cf", Cuckoo(/*capacity=*/64, /*expansion=*/2));
    for (int i = 0; i < kItems; ++i) {
      const std::string item = "item:" + std::to_string(i);
      log.Command({"CBF.ADD", "cbf", item});
      log.Command({kBloomAddedEffect, "bf", "1", item});
      log.Command({"CF.ADD", "cf", item});
    }
    log.Close();
  }
  ServerConfig config = DurableConfigIn(dir, ServerConfig::AppendFsync::kAlways);
  config.max_filter_memory = 4096;  // each filter grew well past it
  config.maxmemory = 8192;          // and all three together past this
  const auto check = [](Session& s) {
    for (int i = 0; i < kItems; ++i) {
      const std::string item = "item:" + std::to_string(i);
      ASSERT_EQ(s.Run({"CBF.EXISTS", "cbf", item}), Int(1)) << item;
      ASSERT_EQ(s.Run({"BF.EXISTS", "bf", item}), Int(1)) << item;
      ASSERT_EQ(s.Run({"CF.EXISTS", "cf", item}), Int(1)) << item;
    }
    EXPECT_EQ(s.Run({"BF.CARD", "bf"}), Int(kItems));
  };
  {
    auto server = StartOn(config, DefaultFileSystem());
    EXPECT_GT(server->budget.used(), config.maxmemory);
    Session s(server.get());
    check(s);
    // A client of today is judged: a new filter does not fit maxmemory.
    EXPECT_EQ(s.Run({"CF.RESERVE", "new", "64"}).substr(0, 1), "-");
    EXPECT_EQ(s.Run({"EXISTS", "new"}), Int(0));
  }
  {
    // The log again, then a snapshot saved where memory allowed it.
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    check(s);
    ASSERT_EQ(s.Run({"CONFIG", "SET", "maxmemory", "0"}), kOk);
    ASSERT_EQ(RunDurably(*server, s, {"SAVE"}), kOk);
  }
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  check(s);
}

// The other side: the deepest filters a client of this build can make (the
// rate floor, EXPANSION 1 grown to the 64-layer cap, where each layer is
// sized for 1e-30 x 2^-i) are saved in a form the loader takes back.
TEST(OldLogReplay, TheDeepestFiltersAClientCanMakeTodaySaveAndLoad) {
  TempDir dir;
  ServerConfig config = DurableConfigIn(dir, ServerConfig::AppendFsync::kAlways);
  const auto layers = [](Session& s, const std::string& command, const std::string& key) {
    const std::string info = s.Run({command, key});
    const size_t at = info.find("Number of filters\r\n:") + 20;
    return info.substr(at, info.find('\r', at) - at);
  };
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    ASSERT_EQ(s.Run({"BF.RESERVE", "bf", "1e-30", "1", "EXPANSION", "1"}), kOk);
    ASSERT_EQ(s.Run({"CBF.RESERVE", "cbf", "1e-30", "1", "EXPANSION", "1"}), kOk);
    for (int i = 0; i < 70; ++i) {
      const std::string item = "item:" + std::to_string(i);
      s.Run({"BF.ADD", "bf", item});
      s.Run({"CBF.ADD", "cbf", item});
    }
    ASSERT_EQ(layers(s, "BF.INFO", "bf"), "64");
    ASSERT_EQ(layers(s, "CBF.INFO", "cbf"), "64");
    ASSERT_EQ(RunDurably(*server, s, {"SAVE"}), kOk);
  }
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  EXPECT_EQ(layers(s, "BF.INFO", "bf"), "64");
  EXPECT_EQ(layers(s, "CBF.INFO", "cbf"), "64");
}

}  // namespace
}  // namespace bloomgate::testing
