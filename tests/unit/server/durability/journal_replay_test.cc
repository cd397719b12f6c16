// The journal's promise across a crash (the context dropped without
// Shutdown, as kill -9): every acknowledged write comes back exactly,
// including concurrent Bloom adds that can be refused, adds under a limit
// lowered since, BF.CARD across a save raced by adds, and keys that expired
// after the snapshot was cut.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>

#include "../../config/temp_dir.h"
#include "../../persistence/fault_file_system.h"
#include "../durable_session.h"
#include "filters/counting_bloom_filter.h"
#include "filters/cuckoo_filter.h"
#include "server/commands/journal_applier.h"
#include "server/durability/durability.h"
#include "server/durability/journal.h"
#include "../decoding_subscriber.h"

namespace bloomgate::testing {
namespace {

using test_support::FaultFileSystem;
using test_support::FaultOp;
using testutil::TempDir;

// In-process, the write(2) of each flush is what a crash keeps.
ServerConfig ConfigIn(const TempDir& dir) {
  return DurableConfigIn(dir, ServerConfig::AppendFsync::kNo);
}

// The elements of a RESP2 array reply of integers, possibly ending in an
// error element (a truncated BF.MADD): -1 stands for the error.
std::vector<int> ArrayOfIntegers(const std::string& reply) {
  std::vector<int> values;
  size_t at = reply.find("\r\n") + 2;  // past the array header
  while (at < reply.size()) {
    size_t end = reply.find("\r\n", at);
    values.push_back(reply[at] == '-' ? -1 : std::stoi(reply.substr(at + 1, end - at - 1)));
    at = end + 2;
  }
  return values;
}

std::string Item(int writer, int index) {
  return std::to_string(writer) + ":" + std::to_string(index);
}

// Issue 15, bug 1. Two BF.MADDs racing into a NONSCALING filter each get
// part of its capacity. Replaying the commands one after the other gave the
// first all of it and refused the second entirely: its acknowledged items
// were lost, and items refused live were present. Rounds where the adds did
// not interleave prove nothing, so at least three must have.
TEST(JournalReplay, RacingAddsIntoANonScalingFilterComeBackAsAcknowledged) {
  TempDir dir;
  ServerConfig config = ConfigIn(dir);
  constexpr int kCapacity = 4000;
  constexpr int kMaxRounds = 40;
  constexpr int kContendedRoundsWanted = 3;
  struct Round {
    std::string key;
    std::vector<int> replies[2];  // per writer, per item: 1, 0 or -1 (refused)
    std::string card;
  };
  std::vector<Round> rounds;
  int contended = 0;
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session control(server.get());
    for (int r = 0; r < kMaxRounds && contended < kContendedRoundsWanted; ++r) {
      Round round;
      round.key = "nonscaling:" + std::to_string(r);
      ASSERT_EQ(RunDurably(*server, control,
                           {"BF.RESERVE", round.key, "0.01", std::to_string(kCapacity),
                            "NONSCALING"}),
                kOk);
      std::barrier start(2);
      std::vector<std::thread> writers;
      for (int w = 0; w < 2; ++w) {
        writers.emplace_back([&, w] {
          Session s(server.get(), /*worker=*/w);
          Args madd = {"BF.MADD", round.key};
          for (int i = 0; i < kCapacity; ++i) madd.push_back(Item(w, i));
          start.arrive_and_wait();
          round.replies[w] = ArrayOfIntegers(RunDurably(*server, s, madd));
        });
      }
      for (std::thread& writer : writers) writer.join();
      bool both_added = true;
      for (const std::vector<int>& replies : round.replies) {
        both_added &= !replies.empty() && replies.front() != -1;
      }
      contended += both_added ? 1 : 0;
      round.card = control.Run({"BF.CARD", round.key});
      rounds.push_back(std::move(round));
    }
  }
  ASSERT_GE(contended, kContendedRoundsWanted)
      << "the two BF.MADDs never interleaved in " << rounds.size() << " rounds";
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  for (const Round& round : rounds) {
    uint64_t lost = 0;
    for (int w = 0; w < 2; ++w) {
      const std::vector<int>& replies = round.replies[w];
      for (size_t i = 0; i < replies.size() && replies[i] != -1; ++i) {
        if (s.Run({"BF.EXISTS", round.key, Item(w, static_cast<int>(i))}) != Int(1)) ++lost;
      }
    }
    EXPECT_EQ(lost, 0u) << "acknowledged items missing after replay of " << round.key;
    EXPECT_EQ(s.Run({"BF.CARD", round.key}), round.card) << round.key;
  }
}

// Issue 15, bug 1, with a limit: adds acknowledged while the filter could
// grow are all present after a restart under a max-filter-memory that no
// longer lets it grow (replaying BF.ADD judged the limit again: refused).
TEST(JournalReplay, AcknowledgedAddsSurviveALimitLoweredBeforeTheRestart) {
  TempDir dir;
  ServerConfig config = ConfigIn(dir);
  constexpr int kItems = 2000;
  std::string card;
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    ASSERT_EQ(RunDurably(*server, s, {"BF.RESERVE", "grows", "0.01", "100"}), kOk);
    for (int i = 0; i < kItems; ++i) {
      ASSERT_TRUE(RunDurably(*server, s, {"BF.ADD", "grows", Item(0, i)}).starts_with(":"));
    }
    ASSERT_EQ(s.Run({"BF.INFO", "grows", "FILTERS"}), Arr(1) + Int(5));
    card = s.Run({"BF.CARD", "grows"});
  }
  // Room for the first layer only.
  config.max_filter_memory = 4096;
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  int missing = 0;
  for (int i = 0; i < kItems; ++i) {
    if (s.Run({"BF.EXISTS", "grows", Item(0, i)}) != Int(1)) ++missing;
  }
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(s.Run({"BF.CARD", "grows"}), card);
}

// Issue 15, bug 6. A snapshot's Bloom bits are written while adds go on;
// its item counts must be those of its cut, since the log after the cut
// replays (and counts) every later add. Each save here is held just before
// it writes its records until more adds have landed: counts taken then
// (instead of at the cut) come back too high, and replay that judged
// "already present" again came back too low.
TEST(JournalReplay, BloomCardinalityIsExactAfterSavesRacedByAdds) {
  TempDir dir;
  ServerConfig config = ConfigIn(dir);
  FaultFileSystem fs(DefaultFileSystem());
  constexpr int kWriters = 2;
  constexpr int kItemsPerWriter = 20000;
  constexpr int kSaves = 3;
  std::string card;
  int raced_saves = 0;
  {
    auto server = StartOn(config, &fs);
    Session s(server.get());
    ASSERT_EQ(RunDurably(*server, s, {"BF.RESERVE", "bf", "0.001", "200000"}), kOk);
    std::atomic<int> added{0};
    std::barrier start(kWriters + 1);
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w) {
      writers.emplace_back([&, w] {
        Session session(server.get(), /*worker=*/w);
        start.arrive_and_wait();
        for (int i = 0; i < kItemsPerWriter; ++i) {
          RunDurably(*server, session, {"BF.ADD", "bf", Item(w, i)});
          added.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    start.arrive_and_wait();
    Session saver(server.get(), /*worker=*/0);
    for (int i = 0; i < kSaves; ++i) {
      // Creates during a save: the cut's new log, then the snapshot's
      // temporary file, after the cut and before any record is described.
      fs.BeforeNth(FaultOp::kCreateNew, fs.calls(FaultOp::kCreateNew) + 2, [&] {
        const int after_cut = added.load() + 200;
        const int64_t deadline = NowMs() + 5000;
        while (added.load() < after_cut && NowMs() < deadline) std::this_thread::yield();
        if (added.load() >= after_cut) ++raced_saves;
      });
      ASSERT_EQ(saver.Run({"SAVE"}), kOk);
    }
    for (std::thread& writer : writers) writer.join();
    card = s.Run({"BF.CARD", "bf"});
  }
  ASSERT_GE(raced_saves, 1) << "no save was raced by adds";
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  EXPECT_EQ(s.Run({"BF.CARD", "bf"}), card) << raced_saves << " saves raced by adds";
}

// Issue 15, bug 2. A key with a deadline is in the snapshot, a later write to
// it is logged, the key expires, the process dies: the replayed write used to
// recreate the key with default parameters and no deadline.
// Each creation's journal record carries the filter's random seed, so the
// log's replay (and a replica fed the same records) rebuilds the identical
// filter: same seed, same answers for added and absent items, CBF and CF
// writes replayed as commands included.
TEST(JournalReplay, ReplayRebuildsEachFilterWithItsOwnSeed) {
  TempDir dir;
  ServerConfig config = ConfigIn(dir);
  const Args keys = {"bf", "cbf", "cf"};
  uint64_t seeds[3] = {};
  std::vector<std::string> answers;
  auto ask = [](Session& s) {
    std::vector<std::string> out;
    for (int i = 0; i < 300; ++i) {
      const std::string item = "probe:" + std::to_string(i);
      out.push_back(s.Run({"BF.EXISTS", "bf", item}) + s.Run({"CBF.COUNT", "cbf", item}) +
                    s.Run({"CF.COUNT", "cf", item}));
    }
    return out;
  };
  auto seeds_of = [](ServerContext& server, uint64_t* out) {
    out[0] = server.keyspace.Find("bf", NowMs())->bloom()->hash_seed();
    out[1] = server.keyspace.Find("cbf", NowMs())->get<CountingBloomFilter>()->hash_seed();
    out[2] = server.keyspace.Find("cf", NowMs())->get<CuckooFilter>()->hash_seed();
  };
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    RunDurably(*server, s, {"BF.RESERVE", "bf", "0.2", "50"});
    RunDurably(*server, s, {"CBF.RESERVE", "cbf", "0.2", "50"});
    RunDurably(*server, s, {"CF.RESERVE", "cf", "64"});
    for (int i = 0; i < 150; ++i) {  // past each first layer: growth keeps the seed
      const std::string item = "probe:" + std::to_string(2 * i);
      RunDurably(*server, s, {"BF.ADD", "bf", item});
      RunDurably(*server, s, {"CBF.ADD", "cbf", item});
      RunDurably(*server, s, {"CF.ADD", "cf", item});
    }
    seeds_of(*server, seeds);
    answers = ask(s);
    EXPECT_GT(server->keyspace.Find("bf", NowMs())->bloom()->num_layers(), 1u);
  }
  for (uint64_t seed : seeds) EXPECT_NE(seed, 0u);
  EXPECT_NE(seeds[0], seeds[1]);
  EXPECT_NE(seeds[1], seeds[2]);
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  uint64_t replayed[3] = {};
  seeds_of(*server, replayed);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(replayed[k], seeds[k]) << keys[k];
  EXPECT_EQ(ask(s), answers);
  // And through a snapshot: SAVE, restart, same seeds.
  ASSERT_EQ(s.Run({"SAVE"}), kOk);
  server.reset();
  server = StartOn(config, DefaultFileSystem());
  Session after(server.get());
  seeds_of(*server, replayed);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(replayed[k], seeds[k]) << keys[k];
  EXPECT_EQ(ask(after), answers);
}

TEST(JournalReplay, AKeyThatExpiredAfterTheSnapshotStaysGone) {
  TempDir dir;
  ServerConfig config = ConfigIn(dir);
  const Args keys = {"bf", "cbf", "cf"};
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    RunDurably(*server, s, {"BF.ADD", "bf", "a"});
    RunDurably(*server, s, {"CBF.ADD", "cbf", "a"});
    RunDurably(*server, s, {"CF.ADD", "cf", "a"});
    for (const std::string& key : keys) RunDurably(*server, s, {"PEXPIRE", key, "300"});
    ASSERT_EQ(s.Run({"SAVE"}), kOk);
    RunDurably(*server, s, {"BF.ADD", "bf", "b"});
    RunDurably(*server, s, {"CBF.ADD", "cbf", "b"});
    RunDurably(*server, s, {"CF.ADD", "cf", "b"});
    // Wait for the deadline (polled, bounded), without touching the keys.
    int64_t deadline = NowMs() + 300;
    while (NowMs() <= deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  for (const std::string& key : keys) {
    EXPECT_EQ(s.Run({"EXISTS", key}), Int(0)) << key << " came back after it expired";
  }
  EXPECT_EQ(s.Run({"DBSIZE"}), Int(0));
}

// The same keys, still alive at the restart: their deadline and both items,
// the one from the snapshot and the one from the log, come back.
TEST(JournalReplay, AKeyStillAliveKeepsItsDeadlineAndEveryItem) {
  TempDir dir;
  ServerConfig config = ConfigIn(dir);
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    RunDurably(*server, s, {"BF.RESERVE", "bf", "0.001", "1000"});
    RunDurably(*server, s, {"BF.ADD", "bf", "a"});
    RunDurably(*server, s, {"PEXPIRE", "bf", "100000"});
    ASSERT_EQ(s.Run({"SAVE"}), kOk);
    RunDurably(*server, s, {"BF.ADD", "bf", "b"});
  }
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  EXPECT_EQ(s.Run({"BF.EXISTS", "bf", "a"}), Int(1));
  EXPECT_EQ(s.Run({"BF.EXISTS", "bf", "b"}), Int(1));
  EXPECT_EQ(s.Run({"BF.INFO", "bf", "CAPACITY"}), Arr(1) + Int(1000));
  std::string ttl = s.Run({"PTTL", "bf"});
  EXPECT_TRUE(ttl.starts_with(":9")) << ttl;
}

// What replay must not do: judge a logged add again. A MADD cut short by a
// full filter is journaled as the items that went in, not as the command.
TEST(JournalReplay, ATruncatedMaddIsJournaledAsTheItemsThatWentIn) {
  auto server = MakeServer();
  struct Recorder : DecodingSubscriber {
    void OnCommandRecord(const std::vector<std::string>& args) override {
      commands.emplace_back(args.begin(), args.end());
    }
    void OnFilterRecord(const std::string& key, bool) override { filters.emplace_back(key); }
    std::vector<Args> commands;
    Args filters;
  } recorder;
  server->journal.Subscribe(&recorder);
  Session s(server.get());
  ASSERT_EQ(s.Run({"BF.RESERVE", "k", "0.01", "2", "NONSCALING"}), kOk);
  s.Run({"BF.MADD", "k", "x", "x", "y", "z"});
  s.Run({"BF.MADD", "k", "w"});  // refused whole: nothing took effect
  server->journal.Unsubscribe(&recorder);
  EXPECT_EQ(recorder.filters, Args{"k"});
  ASSERT_EQ(recorder.commands.size(), 1u);
  EXPECT_EQ(recorder.commands[0], (Args{std::string(kBloomAddedEffect), "k", "101", "x", "x", "y"}));
}

// A CF.INSERT stopped part way by maxmemory acknowledged the items before
// the stop. It was journaled as nothing (the whole command counted as
// failed), so a restart lost them; journaled whole, a restart without the
// limit would add the refused ones too. The record is the command cut after
// the items tried.
TEST(JournalReplay, ACuckooInsertStoppedByMemoryComesBackAsAcknowledged) {
  TempDir dir;
  ServerConfig config = ConfigIn(dir);
  const Args reserve = {"CF.RESERVE", "k", "8"};
  {
    auto probe = MakeServer();
    Session p(probe.get());
    ASSERT_EQ(p.Run(reserve), kOk);
    config.maxmemory = probe->budget.used() + 64;  // no room for a second sub-filter
  }
  Args insert = {"CF.INSERT", "k", "ITEMS"};
  for (int i = 0; i < 100; ++i) insert.push_back(Item(0, i));
  std::vector<int> replies;
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    ASSERT_EQ(RunDurably(*server, s, reserve), kOk);
    replies = ArrayOfIntegers(RunDurably(*server, s, insert));
  }
  ASSERT_GE(replies.size(), 2u);
  ASSERT_EQ(replies.back(), -1) << "the inserts should have stopped at the memory limit";
  replies.pop_back();
  for (int reply : replies) ASSERT_EQ(reply, 1);
  config.maxmemory = 0;  // a restart with room: replay must still stop where the live insert did
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  for (size_t i = 0; i < replies.size(); ++i) {
    EXPECT_EQ(s.Run({"CF.EXISTS", "k", Item(0, static_cast<int>(i))}), Int(1)) << i;
  }
  // Neither fewer (lost) nor more (refused live, added on replay) items.
  EXPECT_NE(s.Run({"CF.INFO", "k"})
                .find("Number of items inserted\r\n" + Int(static_cast<int64_t>(replies.size()))),
            std::string::npos)
      << s.Run({"CF.INFO", "k"});
  // (CF.COUNT of a refused item is no check: a small filter's fingerprints
  // collide a few times in a hundred, and the item count above already says
  // that nothing refused was added.)
}

// Issue 15, bug 7. A flush of the newest log used to acknowledge its waiters
// even when a cut had failed to close the log before it.
TEST(JournalReplay, NothingIsAcknowledgedOnceAnOlderLogCouldNotBeClosed) {
  TempDir dir;
  ServerConfig config = ConfigIn(dir);
  FaultFileSystem fs(DefaultFileSystem());
  auto server = StartOn(config, &fs);
  Session s(server.get());
  s.Run({"BF.ADD", "bf", "a"});  // in the first log
  fs.FailNth(FaultOp::kClose, fs.calls(FaultOp::kClose) + 1, "Input/output error");
  Session saver(server.get());
  saver.Run({"BGSAVE"});  // the cut closes the first log, and that fails
  // A record that reached the new log (journaled directly: the dispatcher
  // refuses every write once the error is latched).
  const std::vector<std::string_view> record = {"DEL", "other"};
  server->journal.RecordCommand(s.client().journal, NowMs(), record);
  EXPECT_FALSE(server->journal.AwaitForReply(s.client().journal).ok());
  EXPECT_TRUE(s.Run({"BF.ADD", "bf", "b"}).starts_with("-MISCONF"));
}

}  // namespace
}  // namespace bloomgate::testing
