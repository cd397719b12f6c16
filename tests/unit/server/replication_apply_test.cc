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
#include "session.h"

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

}  // namespace
}  // namespace bloomgate::testing
