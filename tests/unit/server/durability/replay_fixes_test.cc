// What start-up replay used to get wrong: a windowed MERGE into an existing
// key lost the key's deadline, and the expiry sweep after the replay
// removed keys without recording it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "../../config/temp_dir.h"
#include "../durable_session.h"
#include "persistence/append_log.h"

namespace bloomgate::testing {
namespace {

using testutil::TempDir;

ServerConfig UnsyncedConfigIn(const TempDir& dir) {
  return DurableConfigIn(dir, ServerConfig::AppendFsync::kNo);
}

int64_t Pttl(Session& s, const std::string& key) {
  const std::string reply = s.Run({"PTTL", key});
  return std::stoll(reply.substr(1));
}

void ExpectMergeKeepsDeadline(const std::string& reserve, const std::string& add,
                              const std::string& exists, const std::string& merge) {
  TempDir dir;
  ServerConfig config = UnsyncedConfigIn(dir);
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    ASSERT_EQ(RunDurably(*server, s, {reserve, "dest", "0.01", "100", "WINDOW", "60", "SEED", "7"}), kOk);
    ASSERT_EQ(RunDurably(*server, s, {reserve, "src", "0.01", "100", "WINDOW", "60", "SEED", "7"}), kOk);
    RunDurably(*server, s, {add, "src", "item"});
    ASSERT_EQ(RunDurably(*server, s, {"PEXPIRE", "dest", "600000"}), Int(1));
    ASSERT_EQ(RunDurably(*server, s, {merge, "dest", "src"}), kOk);
    ASSERT_GT(Pttl(s, "dest"), 0) << "the merge kept the deadline where it ran";
  }  // a crash: no final snapshot
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  EXPECT_GT(Pttl(s, "dest"), 0) << merge << " into an existing key lost its deadline on replay";
  EXPECT_EQ(s.Run({exists, "dest", "item"}), Int(1));
}

TEST(ReplayFixes, AWindowedBloomMergeIntoAnExistingKeyKeepsItsDeadline) {
  ExpectMergeKeepsDeadline("BF.RESERVE", "BF.ADD", "BF.EXISTS", "BF.MERGE");
}

TEST(ReplayFixes, AWindowedCountingMergeIntoAnExistingKeyKeepsItsDeadline) {
  ExpectMergeKeepsDeadline("CBF.RESERVE", "CBF.ADD", "CBF.EXISTS", "CBF.MERGE");
}

// The keys the sweep after the replay removes are deleted in the new log
// too, so every subscriber of the stream (a replica next) learns of it.
TEST(ReplayFixes, TheStartupExpirySweepRecordsItsDeletions) {
  TempDir dir;
  ServerConfig config = UnsyncedConfigIn(dir);
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    ASSERT_EQ(RunDurably(*server, s, {"CBF.RESERVE", "short", "0.01", "100"}), kOk);
    ASSERT_EQ(RunDurably(*server, s, {"PEXPIRE", "short", "50"}), Int(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  uint64_t newest = 0;
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    EXPECT_EQ(s.Run({"EXISTS", "short"}), Int(0));
    std::vector<uint64_t> generations;
    ASSERT_TRUE(ListLogGenerations(*DefaultFileSystem(), config.dir, config.appendfilename,
                                   &generations)
                    .ok());
    ASSERT_FALSE(generations.empty());
    newest = generations.back();
    // The DEL is flushed with the next write's reply.
    RunDurably(*server, s, {"CBF.RESERVE", "other", "0.01", "100"});
  }
  std::vector<std::vector<std::string>> commands;
  LogReadResult result;
  ASSERT_TRUE(ReadAppendLog(*DefaultFileSystem(),
                            JoinPath(config.dir, LogFileName(config.appendfilename, newest)),
                            /*allow_torn_tail=*/true,
                            [&commands](const LogRecord& record) {
                              if (record.type == LogRecordType::kCommand) {
                                commands.push_back(record.args);
                              }
                              return Status::Ok();
                            },
                            &result)
                  .ok());
  EXPECT_NE(std::find(commands.begin(), commands.end(),
                      std::vector<std::string>{"DEL", "short"}),
            commands.end())
      << "the sweep's deletion is in the log the restart opened";
}

}  // namespace
}  // namespace bloomgate::testing
