// An expired key's removal reaches the journal as a deletion, as Redis
// propagates a DEL: on access (lazily), by the sweep, and under a key that is
// created again; and a log holding it replays to the same keyspace.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../../config/temp_dir.h"
#include "../decoding_subscriber.h"
#include "../durable_session.h"
#include "../session.h"

namespace bloomgate::testing {
namespace {

// Takes every record the journal publishes.
class ExpiryRecorder : public DecodingSubscriber {
 public:
  void OnCommandRecord(const std::vector<std::string>& args) override {
    std::lock_guard lock(mutex_);
    records_.emplace_back(args.begin(), args.end());
  }
  void OnFilterRecord(const std::string& key, bool) override {
    std::lock_guard lock(mutex_);
    records_.push_back({"<filter>", key});
  }
  std::vector<std::vector<std::string>> records() {
    std::lock_guard lock(mutex_);
    return records_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::vector<std::string>> records_;
};

using Record = std::vector<std::string>;

void ExpireSoon(Session& s, const std::string& key) {
  ASSERT_EQ(s.Run({"PEXPIRE", key, "1"}), Int(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

class ExpiryJournal : public ::testing::Test {
 protected:
  void SetUp() override { server_->journal.Subscribe(&recorder_); }
  void TearDown() override { server_->journal.Unsubscribe(&recorder_); }
  ExpiryRecorder recorder_;
  std::unique_ptr<ServerContext> server_ = MakeServer();
};

TEST_F(ExpiryJournal, AKeyFoundExpiredOnAccessIsJournaledAsADeletion) {
  Session s(server_.get());
  s.Run({"BF.ADD", "k", "a"});
  ExpireSoon(s, "k");
  size_t before = recorder_.records().size();
  EXPECT_EQ(s.Run({"EXISTS", "k"}), Int(0));
  auto records = recorder_.records();
  ASSERT_EQ(records.size(), before + 1);
  EXPECT_EQ(records.back(), (Record{"DEL", "k"}));
  EXPECT_EQ(s.Run({"EXISTS", "k"}), Int(0));
  EXPECT_EQ(recorder_.records().size(), before + 1) << "one deletion per expiry";
}

TEST_F(ExpiryJournal, TheSweepJournalsEachKeyItRemoves) {
  Session s(server_.get());
  s.Run({"CBF.ADD", "a", "x"});
  s.Run({"CF.ADD", "b", "x"});
  s.Run({"BF.ADD", "live", "x"});
  ExpireSoon(s, "a");
  ExpireSoon(s, "b");
  size_t before = recorder_.records().size();
  EXPECT_EQ(server_->keyspace.SweepExpired(NowMs(), 100, &server_->key_locks), 2u);
  auto records = recorder_.records();
  ASSERT_EQ(records.size(), before + 2);
  std::vector<Record> dels(records.begin() + static_cast<long>(before), records.end());
  std::sort(dels.begin(), dels.end());
  EXPECT_EQ(dels, (std::vector<Record>{{"DEL", "a"}, {"DEL", "b"}}));
  EXPECT_EQ(server_->keyspace.expired_keys(), 2u);
  EXPECT_EQ(s.Run({"EXISTS", "live"}), Int(1));
}

TEST_F(ExpiryJournal, AWriteThatRecreatesAnExpiredKeyLogsTheDeletionFirst) {
  Session s(server_.get());
  s.Run({"CBF.RESERVE", "k", "0.001", "5000"});
  ExpireSoon(s, "k");
  size_t before = recorder_.records().size();
  EXPECT_EQ(s.Run({"CBF.ADD", "k", "x"}), Int(1));
  auto records = recorder_.records();
  ASSERT_EQ(records.size(), before + 3);
  EXPECT_EQ(records[before], (Record{"DEL", "k"}));
  EXPECT_EQ(records[before + 1], (Record{"<filter>", "k"}));
  EXPECT_EQ(records[before + 2], (Record{"CBF.ADD", "k", "x"}));
}

TEST(ExpiryJournalReplay, ALogWithAnExpiryReplaysToTheSameKeys) {
  testutil::TempDir dir;
  ServerConfig config = DurableConfigIn(dir, ServerConfig::AppendFsync::kAlways);
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    RunDurably(*server, s, {"CBF.RESERVE", "k", "0.001", "5000"});
    RunDurably(*server, s, {"CBF.ADD", "k", "old"});
    RunDurably(*server, s, {"PEXPIRE", "k", "1"});
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(RunDurably(*server, s, {"EXISTS", "k"}), Int(0));
    EXPECT_EQ(RunDurably(*server, s, {"CBF.ADD", "k", "new"}), Int(1));
    RunDurably(*server, s, {"CBF.ADD", "gone", "x"});
    RunDurably(*server, s, {"PEXPIRE", "gone", "1"});
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(server->keyspace.SweepExpired(NowMs(), 100, &server->key_locks), 1u);
    RunDurably(*server, s, {"CBF.ADD", "after", "x"});  // flushes the sweep's record too
    // Dropped without Shutdown: only the log.
  }
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  EXPECT_EQ(s.Run({"CBF.COUNT", "k", "old"}), Int(0));
  EXPECT_EQ(s.Run({"CBF.COUNT", "k", "new"}), Int(1));
  EXPECT_EQ(s.Run({"PTTL", "k"}), Int(-1));
  EXPECT_EQ(s.Run({"EXISTS", "gone"}), Int(0));
  EXPECT_EQ(s.Run({"CBF.COUNT", "after", "x"}), Int(1));
}

}  // namespace
}  // namespace bloomgate::testing
