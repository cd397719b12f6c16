// Durability in-process: snapshot + log across a "crash" (the context is
// dropped without Shutdown, as kill -9 would), exact replay of deletes,
// cuts under concurrent writers, and injected file-system failures.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <thread>

#include "../../config/temp_dir.h"
#include "../../persistence/fault_file_system.h"
#include "../durable_session.h"
#include "filters/key_hash.h"
#include "persistence/snapshot_file.h"
#include "server/commands/journal_applier.h"
#include "server/durability/durability.h"

namespace bloomgate::testing {
namespace {

using test_support::FaultFileSystem;
using test_support::FaultOp;
using testutil::TempDir;

ServerConfig AlwaysSyncedConfigIn(const TempDir& dir) {
  return DurableConfigIn(dir, ServerConfig::AppendFsync::kAlways);
}

std::string ReadWholeFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string InfoFieldOf(Session& session, std::string_view field) {
  std::string info = session.Run({"INFO", "persistence"});
  size_t at = info.find(std::string(field) + ":");
  if (at == std::string::npos) return "<missing>";
  size_t start = at + field.size() + 1;
  return info.substr(start, info.find('\r', start) - start);
}

TEST(Durability, EveryFamilyComesBackFromTheLogAfterACrash) {
  TempDir dir;
  ServerConfig config = AlwaysSyncedConfigIn(dir);
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    EXPECT_EQ(RunDurably(*server, s, {"BF.ADD", "bf", "a"}), Int(1));
    EXPECT_EQ(RunDurably(*server, s, {"CF.ADD", "cf", "a"}), Int(1));
    EXPECT_EQ(RunDurably(*server, s, {"CBF.ADD", "cbf", "a"}), Int(1));
    EXPECT_EQ(RunDurably(*server, s, {"CMS.INITBYDIM", "cms", "100", "4"}), kOk);
    EXPECT_EQ(RunDurably(*server, s, {"CMS.INCRBY", "cms", "a", "7"}), Arr(1) + Int(7));
    EXPECT_EQ(RunDurably(*server, s, {"TOPK.RESERVE", "topk", "2"}), kOk);
    RunDurably(*server, s, {"TOPK.INCRBY", "topk", "a", "5", "b", "3"});
    EXPECT_EQ(RunDurably(*server, s, {"BF.RESERVE", "big", "0.001", "5000"}), kOk);
    EXPECT_EQ(RunDurably(*server, s, {"PEXPIRE", "bf", "100000"}), Int(1));
    // Dropped without Shutdown: no final snapshot, only the log.
  }
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  EXPECT_EQ(s.Run({"BF.EXISTS", "bf", "a"}), Int(1));
  EXPECT_EQ(s.Run({"CF.EXISTS", "cf", "a"}), Int(1));
  EXPECT_EQ(s.Run({"CBF.COUNT", "cbf", "a"}), Int(1));
  EXPECT_EQ(s.Run({"CMS.QUERY", "cms", "a"}), Arr(1) + Int(7));
  EXPECT_EQ(s.Run({"TOPK.COUNT", "topk", "a", "b"}), Arr(2) + Int(5) + Int(3));
  EXPECT_EQ(s.Run({"BF.INFO", "big", "CAPACITY"}), Arr(1) + Int(5000));
  std::string ttl = s.Run({"PTTL", "bf"});
  EXPECT_TRUE(ttl.starts_with(":9") || ttl == Int(100000)) << ttl;
}

TEST(Durability, DeletesAreReplayedExactlyOnceAcrossASnapshotCut) {
  TempDir dir;
  ServerConfig config = AlwaysSyncedConfigIn(dir);
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    for (int i = 0; i < 3; ++i) RunDurably(*server, s, {"CBF.ADD", "cbf", "x"});
    for (int i = 0; i < 3; ++i) RunDurably(*server, s, {"CF.ADD", "cf", "x"});
    EXPECT_EQ(RunDurably(*server, s, {"SAVE"}), kOk);
    EXPECT_EQ(RunDurably(*server, s, {"CBF.DEL", "cbf", "x"}), Int(1));
    EXPECT_EQ(RunDurably(*server, s, {"CF.DEL", "cf", "x"}), Int(1));
  }
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  EXPECT_EQ(s.Run({"CBF.COUNT", "cbf", "x"}), Int(2));
  EXPECT_EQ(s.Run({"CF.COUNT", "cf", "x"}), Int(2));
}

// CBF.INCR replies each item's count including this add, on a missing key
// (created) and an existing one, and the log replays it to the same counts.
TEST(Durability, CountingIncrRepliesTheCountWithThisAddAndReplaysIt) {
  TempDir dir;
  ServerConfig config = AlwaysSyncedConfigIn(dir);
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    EXPECT_EQ(RunDurably(*server, s, {"CBF.INCR", "hits", "a", "b", "a"}),
              Arr(3) + Int(1) + Int(1) + Int(2));
    EXPECT_EQ(RunDurably(*server, s, {"CBF.INCR", "hits", "a"}), Arr(1) + Int(3));
    EXPECT_EQ(s.Run({"CBF.COUNT", "hits", "a"}), Int(3));
    EXPECT_EQ(s.Run({"CF.RESERVE", "cf", "100"}), kOk);
    EXPECT_EQ(s.Run({"CBF.INCR", "cf", "a"}),
              "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  }
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  EXPECT_EQ(s.Run({"CBF.COUNT", "hits", "a"}), Int(3));
  EXPECT_EQ(s.Run({"CBF.COUNT", "hits", "b"}), Int(1));
  EXPECT_EQ(s.Run({"CBF.INCR", "hits", "b"}), Arr(1) + Int(2));
}

TEST(Durability, ABackgroundSaveUnderConcurrentWritersLosesAndDoublesNothing) {
  TempDir dir;
  ServerConfig config = AlwaysSyncedConfigIn(dir);
  config.appendfsync = ServerConfig::AppendFsync::kNo;  // the write(2) is enough in-process
  constexpr int kWriters = 2;
  constexpr int kItemsPerWriter = 1500;
  // The cut is taken once every writer has done this many items, and no
  // writer goes past kItemsBeforeTheCutAtMost before it is taken: it lands
  // mid-stream, with writes on both sides of it and during the save.
  constexpr int kItemsBeforeTheCut = 100;
  constexpr int kItemsBeforeTheCutAtMost = 1000;
  const auto kDeadline = std::chrono::seconds(30);
  {
    auto server = StartOn(config, DefaultFileSystem());
    {
      // Count-min increments run under shared key locks (order-free): the
      // cut's copy-on-first-write must still take each exactly once. One
      // cell, so it holds exactly the number of increments.
      Session setup(server.get());
      ASSERT_EQ(RunDurably(*server, setup, {"CMS.INITBYDIM", "cms", "1", "1"}), kOk);
    }
    std::barrier start(kWriters + 1);
    // progress[w]: items writer w has finished (release/acquire, though the
    // main thread only compares the counts).
    std::atomic<int> progress[kWriters] = {};
    // Release/acquire: set once the save has been tried (the cut taken, or
    // refused), so no writer waits for it longer than that.
    std::atomic<bool> save_tried{false};
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w) {
      writers.emplace_back([&, w] {
        Session s(server.get(), /*worker=*/w);
        start.arrive_and_wait();
        for (int i = 0; i < kItemsPerWriter; ++i) {
          if (i == kItemsBeforeTheCutAtMost) {
            const auto until = std::chrono::steady_clock::now() + kDeadline;
            while (!save_tried.load(std::memory_order_acquire) &&
                   std::chrono::steady_clock::now() < until) {
              std::this_thread::yield();
            }
          }
          std::string item = std::to_string(w) + ":" + std::to_string(i);
          RunDurably(*server, s, {"CBF.ADD", "cbf", item});
          RunDurably(*server, s, {"BF.ADD", "bf", item});
          RunDurably(*server, s, {"CMS.INCRBY", "cms", item, "1"});
          progress[w].store(i + 1, std::memory_order_release);
        }
      });
    }
    start.arrive_and_wait();
    auto writers_reached = [&](int items) {
      for (const auto& done : progress) {
        if (done.load(std::memory_order_acquire) < items) return false;
      }
      return true;
    };
    const auto until = std::chrono::steady_clock::now() + kDeadline;
    while (!writers_reached(kItemsBeforeTheCut) && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    const bool reached = writers_reached(kItemsBeforeTheCut);
    Status status = Status::Error("not started");
    while (reached && !status.ok() && std::chrono::steady_clock::now() < until) {
      status = server->durability->StartBackgroundSave();
      if (!status.ok()) std::this_thread::yield();
    }
    std::string progress_at_cut;
    for (const auto& done : progress) {
      progress_at_cut += " " + std::to_string(done.load(std::memory_order_acquire));
    }
    save_tried.store(true, std::memory_order_release);
    for (std::thread& writer : writers) writer.join();
    ASSERT_TRUE(reached) << "the writers did not reach " << kItemsBeforeTheCut << " items each in "
                         << kDeadline.count() << " s";
    ASSERT_TRUE(status.ok()) << status.message();
    // Wait, with a deadline, for the background save before the "crash".
    Session s(server.get());
    const auto save_until = std::chrono::steady_clock::now() + kDeadline;
    while (InfoFieldOf(s, "rdb_bgsave_in_progress") != "0" &&
           std::chrono::steady_clock::now() < save_until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_EQ(InfoFieldOf(s, "rdb_bgsave_in_progress"), "0")
        << "the background save still runs after " << kDeadline.count() << " s";
    EXPECT_EQ(InfoFieldOf(s, "rdb_last_bgsave_status"), "ok");
    // The snapshot alone holds the adds before the cut: some, not all.
    std::vector<LoadedRecord> records;
    Status read = ReadSnapshot(*DefaultFileSystem(), (dir.path() / "dump.bgs").string(),
                               FilterLimits{}, /*budget=*/nullptr, /*info=*/nullptr, &records);
    ASSERT_TRUE(read.ok()) << read.message();
    uint64_t in_snapshot = 0;
    for (const LoadedRecord& record : records) {
      if (record.name != "cbf") continue;
      in_snapshot = std::get<std::unique_ptr<CountingBloomFilter>>(record.filter)->items();
    }
    EXPECT_GT(in_snapshot, 0u) << "the cut landed before every write";
    EXPECT_LT(in_snapshot, uint64_t{kWriters * kItemsPerWriter})
        << "the cut landed after every write";
    std::cout << "[ cut ] the snapshot holds " << in_snapshot << " of "
              << kWriters * kItemsPerWriter << " counting adds; the writers were at"
              << progress_at_cut << " items when BGSAVE returned\n";
  }
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  // Every add counted once: the snapshot holds those before the cut, the
  // log those after, and no add is in both.
  EXPECT_EQ(s.Run({"CBF.CARD", "cbf"}), Int(kWriters * kItemsPerWriter));
  EXPECT_EQ(s.Run({"CMS.QUERY", "cms", "any"}), Arr(1) + Int(kWriters * kItemsPerWriter));
  EXPECT_EQ(s.Run({"CMS.INFO", "cms"}), Arr(6) + "+width\r\n" + Int(1) + "+depth\r\n" +
                                            Int(1) + "+count\r\n" +
                                            Int(kWriters * kItemsPerWriter));
  for (int w = 0; w < kWriters; ++w) {
    for (int i = 0; i < kItemsPerWriter; i += 7) {
      std::string item = std::to_string(w) + ":" + std::to_string(i);
      ASSERT_EQ(s.Run({"BF.EXISTS", "bf", item}), Int(1)) << item;
      ASSERT_NE(s.Run({"CBF.COUNT", "cbf", item}), Int(0)) << item;
    }
  }
}

// The copy-on-write that keeps counting and cuckoo filters exact in a
// snapshot: once armed, the first write command copies the filter before
// changing it, and later writes leave the copy alone.
TEST(Durability, AWriteAfterTheCutCopiesTheFilterFirst) {
  auto server = MakeServer();
  Session s(server.get());
  s.Run({"CBF.ADD", "cbf", "x"});
  s.Run({"CBF.ADD", "cbf", "x"});
  EntryPtr entry = server->keyspace.Find("cbf", NowMs());
  auto copy = std::make_shared<SnapshotCopy>();
  entry->ArmSnapshotCopy(copy);
  EXPECT_EQ(s.Run({"CBF.COUNT", "cbf", "x"}), Int(2));
  EXPECT_FALSE(copy->taken) << "a read must not make the copy";
  EXPECT_EQ(s.Run({"CBF.ADD", "cbf", "x"}), Int(0));
  ASSERT_TRUE(copy->taken);
  EXPECT_EQ(s.Run({"CBF.DEL", "cbf", "x"}), Int(1));
  EXPECT_EQ(s.Run({"CBF.ADD", "cbf", "y"}), Int(1));
  const auto& copied = std::get<std::unique_ptr<CountingBloomFilter>>(copy->filter);
  ASSERT_NE(copied, nullptr);
  EXPECT_EQ(copied->Count(copied->Hash("x")), 2u);
  EXPECT_EQ(copied->items(), 2u);
  entry->TakeSnapshotCopy(nullptr, false);  // nothing owed any more: the copy stays as it was
  EXPECT_EQ(copied->items(), 2u);
}

TEST(Durability, AFailedSaveKeepsThePreviousSnapshotAndTheServerServing) {
  TempDir dir;
  ServerConfig config = AlwaysSyncedConfigIn(dir);
  FaultFileSystem fs(DefaultFileSystem());
  auto server = StartOn(config, &fs);
  Session s(server.get());
  RunDurably(*server, s, {"BF.ADD", "bf", "before"});
  ASSERT_EQ(s.Run({"SAVE"}), kOk);
  std::filesystem::path snapshot = dir.path() / "dump.bgs";
  std::string good = ReadWholeFile(snapshot);
  RunDurably(*server, s, {"BF.ADD", "bf", "after"});
  fs.FailNth(FaultOp::kRename, fs.calls(FaultOp::kRename) + 1, "Input/output error");
  std::string reply = s.Run({"SAVE"});
  EXPECT_TRUE(reply.starts_with("-ERR ")) << reply;
  EXPECT_NE(reply.find("failed at rename"), std::string::npos) << reply;
  EXPECT_NE(reply.find("Input/output error"), std::string::npos) << reply;
  EXPECT_EQ(ReadWholeFile(snapshot), good);
  EXPECT_EQ(InfoFieldOf(s, "rdb_last_bgsave_status"), "err");
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos)
        << "temporary file left behind: " << entry.path();
  }
  EXPECT_EQ(RunDurably(*server, s, {"BF.ADD", "bf", "later"}), Int(1));
  EXPECT_EQ(s.Run({"BF.EXISTS", "bf", "after"}), Int(1));
  // And nothing was lost: the logs since the good snapshot are all kept.
  server.reset();
  auto reloaded = StartOn(config, DefaultFileSystem());
  Session t(reloaded.get());
  EXPECT_EQ(t.Run({"BF.EXISTS", "bf", "after"}), Int(1));
  EXPECT_EQ(t.Run({"BF.EXISTS", "bf", "later"}), Int(1));
}

TEST(Durability, AFullDiskStopsWritesButNotReads) {
  TempDir dir;
  ServerConfig config = AlwaysSyncedConfigIn(dir);
  FaultFileSystem fs(DefaultFileSystem());
  auto server = StartOn(config, &fs);
  Session s(server.get());
  RunDurably(*server, s, {"BF.ADD", "bf", "a"});
  fs.SetDiskFullAfter(0);
  s.Run({"BF.ADD", "bf", "b"});
  Status flushed = server->journal.AwaitForReply(s.client().journal);
  EXPECT_FALSE(flushed.ok());
  EXPECT_NE(flushed.message().find("No space left on device"), std::string::npos)
      << flushed.message();
  // Redis's rule: no write is acknowledged once the log cannot be written.
  EXPECT_TRUE(s.Run({"BF.ADD", "bf", "c"}).starts_with("-MISCONF"));
  EXPECT_EQ(s.Run({"BF.EXISTS", "bf", "a"}), Int(1));
  EXPECT_EQ(InfoFieldOf(s, "aof_last_write_status"), "err");
}

TEST(Durability, ADamagedSnapshotRefusesToLoadAndIsLeftAsItWas) {
  TempDir dir;
  ServerConfig config = AlwaysSyncedConfigIn(dir);
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    RunDurably(*server, s, {"BF.ADD", "bf", "a"});
    ASSERT_EQ(s.Run({"SAVE"}), kOk);
  }
  std::filesystem::path snapshot = dir.path() / "dump.bgs";
  std::string bytes = ReadWholeFile(snapshot);
  bytes[bytes.size() / 2] ^= 0x01;
  std::ofstream(snapshot, std::ios::binary | std::ios::trunc) << bytes;
  auto server = MakeServer(config);
  Status loaded = LoadDurableState(*server);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.message().find("dump.bgs"), std::string::npos) << loaded.message();
  EXPECT_EQ(ReadWholeFile(snapshot), bytes);
}

}  // namespace
}  // namespace bloomgate::testing
