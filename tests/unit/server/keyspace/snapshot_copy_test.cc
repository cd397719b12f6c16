// The copy a snapshot owes itself of a counting or cuckoo filter (issue 15
// bug 3): made off the event loop for a big filter (the writer parks), charged
// to maxmemory, and a write refused with Redis's OOM text when it cannot fit.
#include <gtest/gtest.h>

#include <memory>

#include "../../config/temp_dir.h"
#include "../durable_session.h"
#include "filters/key_hash.h"
#include "server/commands/errors.h"
#include "../session.h"

namespace bloomgate::testing {
namespace {

// ~4.6 MB of 4-bit counters: above SnapshotCopier::kInlineCopyBytes.
constexpr const char* kBigCapacity = "1000000";

uint64_t CopyBytes(const SnapshotCopy& copy) {
  return std::visit([](const auto& f) { return f == nullptr ? 0 : f->memory_bytes(); },
                    copy.filter);
}

TEST(SnapshotCopy, ABigFiltersWriterParksForTheCopyWhichIsCharged) {
  auto server = MakeServer();
  Session s(server.get());
  ASSERT_EQ(s.Run({"CBF.RESERVE", "big", "0.01", kBigCapacity}), kOk);
  ASSERT_EQ(s.Run({"CBF.ADD", "big", "x"}), Int(1));
  EntryPtr entry = server->keyspace.Find("big", NowMs());
  ASSERT_GE(entry->MemoryUsage(), SnapshotCopier::kInlineCopyBytes);
  const uint64_t used = server->budget.used();
  auto copy = std::make_shared<SnapshotCopy>();
  entry->ArmSnapshotCopy(copy);
  EXPECT_EQ(s.Run({"CBF.COUNT", "big", "x"}), Int(1));
  EXPECT_EQ(s.parks(), 0u) << "a read never waits for the copy";
  EXPECT_EQ(s.Run({"CBF.ADD", "big", "x"}), Int(0));
  EXPECT_EQ(s.parks(), 1u) << "the writer of a big filter waits for the copier";
  EXPECT_EQ(server->snapshot_copier.copies_made(), 1u);
  ASSERT_TRUE(copy->taken);
  const auto& copied = std::get<std::unique_ptr<CountingBloomFilter>>(copy->filter);
  ASSERT_NE(copied, nullptr);
  EXPECT_EQ(copied->Count(copied->Hash("x")), 1u) << "the copy is the filter as it was at the cut";
  EXPECT_EQ(server->budget.used(), used + CopyBytes(*copy)) << "the copy counts against maxmemory";
  copy.reset();
  EXPECT_EQ(server->budget.used(), used) << "and is given back when the snapshot is done";
}

TEST(SnapshotCopy, AWriteWhoseCopyDoesNotFitIsRefusedAndChangesNothing) {
  ServerConfig config;
  config.maxmemory = 8 << 20;  // the filter once (~4.6 MB), not twice
  auto server = MakeServer(config);
  Session s(server.get());
  ASSERT_EQ(s.Run({"CBF.RESERVE", "big", "0.01", kBigCapacity}), kOk);
  ASSERT_EQ(s.Run({"CBF.ADD", "big", "x"}), Int(1));
  EntryPtr entry = server->keyspace.Find("big", NowMs());
  const uint64_t used = server->budget.used();
  const uint64_t version = entry->version();
  auto copy = std::make_shared<SnapshotCopy>();
  entry->ArmSnapshotCopy(copy);
  EXPECT_EQ(s.Run({"CBF.ADD", "big", "y"}), Err(errors::kOom));
  EXPECT_EQ(s.Run({"CBF.DEL", "big", "x"}), Err(errors::kOom));
  EXPECT_EQ(s.parks(), 1u) << "after one refused background copy, writers retry inline";
  EXPECT_EQ(s.Run({"CBF.COUNT", "big", "y"}), Int(0));
  EXPECT_EQ(s.Run({"CBF.COUNT", "big", "x"}), Int(1));
  EXPECT_EQ(entry->version(), version);
  EXPECT_FALSE(copy->taken);
  EXPECT_TRUE(entry->snapshot_copy_owed()) << "the snapshot still needs the state at its cut";
  EXPECT_EQ(server->budget.used(), used);
  // Room again: the next write makes the copy (inline, the refusal having
  // been seen) and goes on.
  server->budget.set_limit(0);
  EXPECT_EQ(s.Run({"CBF.ADD", "big", "y"}), Int(1));
  ASSERT_TRUE(copy->taken);
  const auto& copied = std::get<std::unique_ptr<CountingBloomFilter>>(copy->filter);
  EXPECT_EQ(copied->Count(copied->Hash("y")), 0u);
}

TEST(SnapshotCopy, TheSaversCopyThatDoesNotFitFailsTheSaveAndFreesTheWriters) {
  testutil::TempDir dir;
  ServerConfig config = DurableConfigIn(dir, ServerConfig::AppendFsync::kAlways);
  config.maxmemory = 8 << 20;
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  ASSERT_EQ(s.Run({"CBF.RESERVE", "big", "0.01", kBigCapacity}), kOk);
  ASSERT_EQ(s.Run({"CF.RESERVE", "cf", "100000"}), kOk);
  std::string reply = s.Run({"SAVE"});
  EXPECT_TRUE(reply.starts_with("-ERR out of memory copying key")) << reply;
  EntryPtr entry = server->keyspace.Find("big", NowMs());
  EXPECT_FALSE(entry->snapshot_copy_owed());
  EXPECT_EQ(s.Run({"CBF.ADD", "big", "x"}), Int(1));
  EXPECT_EQ(s.Run({"CF.ADD", "cf", "x"}), Int(1));
}

}  // namespace
}  // namespace bloomgate::testing
