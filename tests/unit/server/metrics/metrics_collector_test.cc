// What /metrics shows (server/metrics/metrics_collector.h): the exporter's
// server metrics, and per filter, the largest metrics-top-filters by memory,
// the figures BLOOMGATE.HEALTH computes.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "server/base/clock.h"
#include "server/metrics/metrics_collector.h"
#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

// sample line without its value -> value
std::map<std::string, double> Samples(const std::string& page) {
  std::map<std::string, double> samples;
  std::istringstream in(page);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    samples[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return samples;
}

// Every sample's family was announced by a TYPE line before it, once.
void ExpectWellFormed(const std::string& page) {
  std::istringstream in(page);
  std::string line, family;
  std::map<std::string, int> types;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_EQ(++types[family], 1) << family;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_EQ(name, family) << line;
  }
}

std::string Filter(std::string_view metric, std::string_view key, std::string_view type) {
  return std::string(metric) + "{key=\"" + std::string(key) + "\",type=\"" + std::string(type) +
         "\"}";
}

TEST(MetricsCollector, ServerMetricsUseTheExportersNames) {
  auto server = MakeServer();
  Session s(server.get());
  ASSERT_EQ(s.Run({"BF.ADD", "a", "x"}), Int(1));
  MetricsCollector collector(*server);
  const std::string page = collector.Collect(NowMs());
  ExpectWellFormed(page);
  const auto samples = Samples(page);
  EXPECT_EQ(samples.at("redis_up"), 1);
  EXPECT_EQ(samples.at("redis_db_keys{db=\"db0\"}"), 1);
  EXPECT_EQ(samples.at("redis_commands_total{cmd=\"bf.add\"}"), 1);
  EXPECT_GE(samples.at("redis_commands_processed_total"), 1);
  EXPECT_GT(samples.at("redis_memory_used_bytes"), 0);
  EXPECT_TRUE(samples.count("redis_commands_duration_seconds_total{cmd=\"bf.add\"}"));
  EXPECT_NE(page.find("# TYPE redis_commands_total counter\n"), std::string::npos);
  EXPECT_NE(page.find("# TYPE redis_connected_clients gauge\n"), std::string::npos);
}

TEST(MetricsCollector, EachFamilyReportsWhatHealthComputes) {
  auto server = MakeServer();
  Session s(server.get());
  ASSERT_EQ(s.Run({"BF.RESERVE", "bf", "0.01", "1000"}), kOk);
  for (int i = 0; i < 300; ++i) s.Run({"BF.ADD", "bf", "item" + std::to_string(i)});
  ASSERT_EQ(s.Run({"CF.RESERVE", "cf", "1000"}), kOk);
  for (int i = 0; i < 50; ++i) s.Run({"CF.ADD", "cf", "item" + std::to_string(i)});
  ASSERT_EQ(s.Run({"CBF.RESERVE", "cbf", "0.01", "1000"}), kOk);
  for (int i = 0; i < 20; ++i) s.Run({"CBF.ADD", "cbf", "item" + std::to_string(i)});
  ASSERT_EQ(s.Run({"BF.RESERVE", "win", "0.01", "1000", "WINDOW", "3600", "GENERATIONS", "3"}),
            kOk);
  for (int i = 0; i < 7; ++i) s.Run({"BF.ADD", "win", "item" + std::to_string(i)});
  MetricsCollector collector(*server);
  const std::string page = collector.Collect(NowMs());
  ExpectWellFormed(page);
  const auto samples = Samples(page);
  EXPECT_EQ(samples.at(Filter("bloomgate_filter_items", "bf", "MBbloom--")), 300) << page;
  EXPECT_EQ(samples.at(Filter("bloomgate_filter_capacity", "bf", "MBbloom--")), 1000);
  EXPECT_EQ(samples.at(Filter("bloomgate_filter_error_rate", "bf", "MBbloom--")), 0.01);
  const double fill = samples.at(Filter("bloomgate_filter_fill_ratio", "bf", "MBbloom--"));
  EXPECT_GT(fill, 0.05);
  EXPECT_LT(fill, 0.5);
  const double fp = samples.at(Filter("bloomgate_filter_estimated_error_rate", "bf", "MBbloom--"));
  EXPECT_GT(fp, 0);
  EXPECT_LT(fp, 0.01);
  EXPECT_EQ(samples.at(Filter("bloomgate_filter_items", "cf", "MBbloomCF")), 50);
  EXPECT_EQ(samples.at(Filter("bloomgate_filter_items", "cbf", "BGcountBF")), 20);
  EXPECT_EQ(samples.at(Filter("bloomgate_filter_items", "win", "MBbloomW-")), 7);
  // MEMORY USAGE's figure, less the name it adds.
  const std::string usage = s.Run({"MEMORY", "USAGE", "bf"});
  EXPECT_EQ(samples.at(Filter("bloomgate_filter_memory_bytes", "bf", "MBbloom--")),
            std::stod(usage.substr(1)) - 2);
  // The windowed filter's live generations, each with its own fill; the 7
  // items are in the current one.
  double generation_items = 0;
  int generations = 0;
  for (const auto& [line, value] : samples) {
    if (line.rfind("bloomgate_filter_generation_items{key=\"win\",type=\"MBbloomW-\",generation=\"",
                   0) == 0) {
      generation_items += value;
      ++generations;
    }
  }
  EXPECT_GE(generations, 1) << page;
  EXPECT_EQ(generation_items, 7);
  // Only windowed filters have generation series.
  EXPECT_EQ(page.find("bloomgate_filter_generation_fill_ratio{key=\"bf\""), std::string::npos);
}

TEST(MetricsCollector, OnlyTheLargestTopFiltersGetSeries) {
  ServerConfig config;
  config.metrics_top_filters = 2;
  auto server = MakeServer(config);
  Session s(server.get());
  ASSERT_EQ(s.Run({"BF.RESERVE", "small", "0.01", "100"}), kOk);
  ASSERT_EQ(s.Run({"BF.RESERVE", "large", "0.01", "100000"}), kOk);
  ASSERT_EQ(s.Run({"BF.RESERVE", "medium", "0.01", "10000"}), kOk);
  MetricsCollector collector(*server);
  const auto samples = Samples(collector.Collect(NowMs()));
  EXPECT_TRUE(samples.count(Filter("bloomgate_filter_items", "large", "MBbloom--")));
  EXPECT_TRUE(samples.count(Filter("bloomgate_filter_items", "medium", "MBbloom--")));
  EXPECT_FALSE(samples.count(Filter("bloomgate_filter_items", "small", "MBbloom--")));
  EXPECT_EQ(samples.at("bloomgate_filters"), 3);
  EXPECT_EQ(samples.at("bloomgate_filters_reported"), 2);
  EXPECT_EQ(samples.at("bloomgate_metrics_scan_complete"), 1);
  // CONFIG SET reaches the next scrape.
  ASSERT_EQ(s.Run({"CONFIG", "SET", "metrics-top-filters", "0"}), kOk);
  EXPECT_EQ(Samples(collector.Collect(NowMs())).at("bloomgate_filters_reported"), 0);
}

TEST(MetricsCollector, KeyNamesAreEscapedAndBounded) {
  auto server = MakeServer();
  Session s(server.get());
  const std::string evil = "a\"b\\c\nd";
  ASSERT_EQ(s.Run({"BF.ADD", evil, "x"}), Int(1));
  const std::string longest(10'000, 'k');
  ASSERT_EQ(s.Run({"BF.ADD", longest, "x"}), Int(1));
  MetricsCollector collector(*server);
  const std::string page = collector.Collect(NowMs());
  ExpectWellFormed(page);
  const auto samples = Samples(page);
  EXPECT_EQ(samples.at(Filter("bloomgate_filter_items", "a\\\"b\\\\c\\nd", "MBbloom--")), 1)
      << page;
  EXPECT_EQ(samples.at(Filter("bloomgate_filter_items", std::string(256, 'k') + "...",
                              "MBbloom--")),
            1);
  EXPECT_EQ(page.find(std::string(257, 'k')), std::string::npos);
}

}  // namespace
}  // namespace bloomgate

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

// Bounded work: one scrape ranks at most kMaxKeysPerScrape keys; a larger
// keyspace is walked in slices, one per scrape, and every key is in one.
TEST(MetricsCollector, AKeyspaceLargerThanOneScrapeIsRankedInSlices) {
  auto server = MakeServer();
  const uint64_t total = kMaxKeysPerScrape + 1000;
  for (uint64_t i = 0; i < total; ++i) {
    server->keyspace.Put("k" + std::to_string(i), MakeBloomEntry(), /*expire_at_ms=*/0);
  }
  MetricsCollector collector(*server);
  const auto first = Samples(collector.Collect(NowMs()));
  EXPECT_EQ(first.at("bloomgate_metrics_scan_complete"), 0);
  const double first_keys = first.at("bloomgate_metrics_keys_scanned");
  // Keys of one name hash go out together, so a slice may run a few past.
  EXPECT_GE(first_keys, kMaxKeysPerScrape);
  EXPECT_LE(first_keys, kMaxKeysPerScrape + 16);
  const auto second = Samples(collector.Collect(NowMs()));
  EXPECT_EQ(second.at("bloomgate_metrics_scan_complete"), 0);
  EXPECT_EQ(first_keys + second.at("bloomgate_metrics_keys_scanned"), total);
  // Then from the start again.
  EXPECT_EQ(Samples(collector.Collect(NowMs())).at("bloomgate_metrics_keys_scanned"), first_keys);
}

}  // namespace
}  // namespace bloomgate
