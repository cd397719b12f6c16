// A replica's side of the stream, in process (no replica link exists yet):
// what a primary publishes, applied with origin kReplication, gives the
// same keyspace, is journaled again on the replica (its own log and its
// own replicas get it), and is applied under key locks, so the replica
// serves reads meanwhile.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "persistence/append_log.h"
#include "server/commands/journal_applier.h"
#include "server/durability/journal.h"
#include "../session.h"

namespace bloomgate::testing {
namespace {

class Tap : public JournalSubscriber {
 public:
  bool accepting() const override { return true; }
  void OnRecord(const JournalRecord& record) override {
    std::lock_guard lock(mutex_);
    records_.emplace_back(record.bytes);
  }
  std::vector<std::string> records() {
    std::lock_guard lock(mutex_);
    return records_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> records_;
};

// Applies every record of `stream` to `server` (by default as a replica
// applies its primary's stream).
void ApplyStream(ServerContext& server, const std::vector<std::string>& stream,
                 JournalOrigin origin = JournalOrigin::kReplication) {
  JournalApplier applier(server, origin);
  for (const std::string& bytes : stream) {
    LogRecord record;
    ASSERT_EQ(DecodeLogRecord(bytes, &record), "");
    Status status = applier.Apply(record);
    ASSERT_TRUE(status.ok()) << status.message();
  }
  EXPECT_EQ(applier.failures(), 0u);
}

TEST(ReplicationApply, AppliedRecordsGiveTheSameStateAndAreJournaledAgain) {
  auto primary = MakeServer();
  auto replica = MakeServer();
  Tap primary_stream;
  Tap replica_stream;
  primary->journal.Subscribe(&primary_stream);
  replica->journal.Subscribe(&replica_stream);
  Session p(primary.get());
  p.Run({"BF.ADD", "b", "x"});                     // a creation and an effect
  ASSERT_EQ(p.Run({"CBF.RESERVE", "c", "0.01", "100"}), kOk);
  p.Run({"CBF.ADD", "c", "a"});                    // a command
  ASSERT_EQ(p.Run({"MULTI"}), kOk);
  p.Run({"CBF.ADD", "c", "b"});
  p.Run({"CBF.DEL", "c", "a"});
  p.Run({"EXEC"});                                  // a unit
  ASSERT_EQ(p.Run({"BF.RESERVE", "w", "0.01", "100", "WINDOW", "60"}), kOk);
  p.Run({"BF.ADD", "w", "i"});                     // a windowed effect
  ASSERT_EQ(p.Run({"PEXPIRE", "c", "600000"}), Int(1));
  const std::vector<std::string> stream = primary_stream.records();
  ASSERT_EQ(stream.size(), 8u);
  ApplyStream(*replica, stream);
  EXPECT_EQ(replica_stream.records(), stream)
      << "the replica journals again exactly what it applied, a unit as one unit";
  Session r(replica.get());
  EXPECT_EQ(r.Run({"BF.EXISTS", "b", "x"}), Int(1));
  EXPECT_EQ(r.Run({"CBF.EXISTS", "c", "b"}), Int(1));
  EXPECT_EQ(r.Run({"CBF.EXISTS", "c", "a"}), Int(0));
  EXPECT_EQ(r.Run({"BF.EXISTS", "w", "i"}), Int(1));
  EXPECT_EQ(r.Run({"BF.CARD", "b"}), p.Run({"BF.CARD", "b"}));
  EXPECT_GT(std::stoll(r.Run({"PTTL", "c"}).substr(1)), 500000) << "the deadline came along";
  primary->journal.Unsubscribe(&primary_stream);
  replica->journal.Unsubscribe(&replica_stream);
}

// Start-up replay applies the same records without publishing them again:
// they are in the log being replayed.
TEST(ReplicationApply, StartupReplayDoesNotJournalAgain) {
  auto primary = MakeServer();
  auto restarted = MakeServer();
  Tap primary_stream;
  Tap restarted_stream;
  primary->journal.Subscribe(&primary_stream);
  restarted->journal.Subscribe(&restarted_stream);
  Session p(primary.get());
  p.Run({"BF.ADD", "b", "x"});
  ApplyStream(*restarted, primary_stream.records(), JournalOrigin::kStartupReplay);
  EXPECT_TRUE(restarted_stream.records().empty());
  Session r(restarted.get());
  EXPECT_EQ(r.Run({"BF.EXISTS", "b", "x"}), Int(1));
  primary->journal.Unsubscribe(&primary_stream);
  restarted->journal.Unsubscribe(&restarted_stream);
}

// Effects are applied under the key's lock: a client reading the same
// filter meanwhile never races the applier (TSan in CI checks the rest).
TEST(ReplicationApply, AReplicaServesReadsWhileItApplies) {
  auto primary = MakeServer();
  auto replica = MakeServer();
  Tap primary_stream;
  primary->journal.Subscribe(&primary_stream);
  Session p(primary.get());
  constexpr int kItems = 2000;
  for (int i = 0; i < kItems; ++i) p.Run({"BF.ADD", "k", std::to_string(i)});
  primary->journal.Unsubscribe(&primary_stream);
  const std::vector<std::string> stream = primary_stream.records();
  std::atomic<bool> done{false};
  std::thread reader([&] {
    Session r(replica.get(), /*worker=*/1);
    while (!done.load()) r.Run({"BF.EXISTS", "k", "0"});
  });
  ApplyStream(*replica, stream);
  done.store(true);
  reader.join();
  Session r(replica.get());
  EXPECT_EQ(r.Run({"BF.CARD", "k"}), p.Run({"BF.CARD", "k"}));
  EXPECT_EQ(r.Run({"BF.EXISTS", "k", std::to_string(kItems - 1)}), Int(1));
}

// A replica applies what its primary did, whatever its own limits: a
// primary with none grows its filters past the replica's max-filter-memory
// and maxmemory, and the replica takes every record, needing no full sync.
TEST(ReplicationApply, AReplicaWithTighterLimitsAppliesWhatThePrimaryDid) {
  auto primary = MakeServer();
  ServerConfig tight;
  tight.max_filter_memory = 4096;
  tight.maxmemory = 8192;
  auto replica = MakeServer(tight);
  Tap primary_stream;
  primary->journal.Subscribe(&primary_stream);
  Session p(primary.get());
  ASSERT_EQ(p.Run({"CBF.RESERVE", "c", "0.01", "100"}), kOk);
  ASSERT_EQ(p.Run({"CF.RESERVE", "f", "64"}), kOk);
  constexpr int kItems = 2000;
  for (int i = 0; i < kItems; ++i) {
    p.Run({"BF.ADD", "b", std::to_string(i)});
    p.Run({"CBF.ADD", "c", std::to_string(i)});
    p.Run({"CF.ADD", "f", std::to_string(i)});
  }
  primary->journal.Unsubscribe(&primary_stream);
  JournalApplier applier(*replica, JournalOrigin::kReplication);
  for (const std::string& bytes : primary_stream.records()) {
    LogRecord record;
    ASSERT_EQ(DecodeLogRecord(bytes, &record), "");
    ASSERT_TRUE(applier.Apply(record).ok());
  }
  EXPECT_EQ(applier.failures(), 0u);
  EXPECT_FALSE(replica->journal.needs_full_sync());
  EXPECT_GT(replica->budget.used(), tight.maxmemory);
  Session r(replica.get());
  for (int i = 0; i < kItems; ++i) {
    ASSERT_EQ(r.Run({"BF.EXISTS", "b", std::to_string(i)}), Int(1)) << i;
    ASSERT_EQ(r.Run({"CBF.COUNT", "c", std::to_string(i)}),
              p.Run({"CBF.COUNT", "c", std::to_string(i)}))
        << i;
    ASSERT_EQ(r.Run({"CF.EXISTS", "f", std::to_string(i)}), Int(1)) << i;
  }
  EXPECT_EQ(r.Run({"BF.CARD", "b"}), p.Run({"BF.CARD", "b"}));
}

// A record the replica cannot apply means it no longer holds what its
// primary holds: it says so in INFO and flags that it needs a full sync,
// instead of diverging silently. Start-up replay only counts it (the log
// is all there is to load).
TEST(ReplicationApply, ARecordThatCannotBeAppliedAsksForAFullSync) {
  auto primary = MakeServer();
  Tap primary_stream;
  primary->journal.Subscribe(&primary_stream);
  Session p(primary.get());
  ASSERT_EQ(p.Run({"CBF.RESERVE", "c", "0.01", "100"}), kOk);
  p.Run({"CBF.ADD", "c", "a"});
  primary->journal.Unsubscribe(&primary_stream);
  const std::vector<std::string> stream = primary_stream.records();
  ASSERT_EQ(stream.size(), 2u);
  LogRecord add;
  ASSERT_EQ(DecodeLogRecord(stream[1], &add), "");
  for (JournalOrigin origin : {JournalOrigin::kReplication, JournalOrigin::kStartupReplay}) {
    auto replica = MakeServer();
    Session r(replica.get());
    EXPECT_FALSE(replica->journal.needs_full_sync());
    EXPECT_NE(r.Run({"INFO", "replication"}).find("replica_full_sync_needed:0\r\n"),
              std::string::npos);
    // Diverged: the key holds another family here, so CBF.ADD is refused.
    r.Run({"BF.ADD", "c", "x"});
    JournalApplier applier(*replica, origin);
    ASSERT_TRUE(applier.Apply(add).ok());
    EXPECT_EQ(applier.failures(), 1u);
    const bool replicated = origin == JournalOrigin::kReplication;
    EXPECT_EQ(replica->journal.needs_full_sync(), replicated);
    const std::string info = r.Run({"INFO", "replication"});
    EXPECT_NE(info.find(replicated ? "replica_full_sync_needed:1\r\n"
                                   : "replica_full_sync_needed:0\r\n"),
              std::string::npos)
        << info;
    EXPECT_NE(info.find(replicated ? "replica_unapplied_records:1\r\n"
                                   : "replica_unapplied_records:0\r\n"),
              std::string::npos)
        << info;
  }
}

}  // namespace
}  // namespace bloomgate::testing
