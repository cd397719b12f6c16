// A transaction reaches the journal as one unit: one record in the stream
// and in the log, so a torn log tail never replays half of it and a
// replica applies it whole. A single write in EXEC stays a plain record.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../config/temp_dir.h"
#include "../decoding_subscriber.h"
#include "../durable_session.h"
#include "persistence/append_log.h"

namespace bloomgate::testing {
namespace {

using testutil::TempDir;

class UnitTap : public JournalSubscriber {
 public:
  bool accepting() const override { return true; }
  void OnRecord(const JournalRecord& record) override {
    LogRecord decoded;
    ASSERT_EQ(DecodeLogRecord(record.bytes, &decoded), "");
    records.push_back(std::move(decoded));
  }
  std::vector<LogRecord> records;
};

TEST(TransactionUnit, ExecPublishesItsWritesAsOneRecord) {
  auto server = MakeServer();
  UnitTap tap;
  server->journal.Subscribe(&tap);
  Session s(server.get());
  ASSERT_EQ(s.Run({"MULTI"}), kOk);
  s.Run({"CBF.RESERVE", "k", "0.01", "100"});
  s.Run({"CBF.ADD", "k", "a"});
  s.Run({"CBF.EXISTS", "k", "a"});  // a read: no record
  s.Run({"CBF.ADD", "k", "b"});
  s.Run({"EXEC"});
  ASSERT_EQ(tap.records.size(), 1u);
  const LogRecord& unit = tap.records[0];
  ASSERT_EQ(unit.type, LogRecordType::kUnit);
  ASSERT_EQ(unit.members.size(), 3u);
  EXPECT_EQ(unit.members[0].type, LogRecordType::kFilter);
  EXPECT_EQ(unit.members[1].args, (std::vector<std::string>{"CBF.ADD", "k", "a"}));
  EXPECT_EQ(unit.members[2].args, (std::vector<std::string>{"CBF.ADD", "k", "b"}));
  // One write in a transaction is published as itself.
  ASSERT_EQ(s.Run({"MULTI"}), kOk);
  s.Run({"CBF.ADD", "k", "c"});
  s.Run({"EXEC"});
  ASSERT_EQ(tap.records.size(), 2u);
  EXPECT_EQ(tap.records[1].type, LogRecordType::kCommand);
  server->journal.Unsubscribe(&tap);
}

// A crash that tears the log inside a transaction's unit: start-up replays
// none of the transaction (each of its writes was its own record before,
// so the ones before the tear came back alone).
TEST(TransactionUnit, ALogCutInsideAUnitReplaysNoneOfIt) {
  TempDir dir;
  ServerConfig config = DurableConfigIn(dir, ServerConfig::AppendFsync::kNo);
  std::string path;
  uint64_t size = 0;
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    ASSERT_EQ(RunDurably(*server, s, {"CBF.RESERVE", "k", "0.01", "100"}), kOk);
    ASSERT_EQ(s.Run({"MULTI"}), kOk);
    s.Run({"CBF.ADD", "k", "a"});
    s.Run({"CBF.ADD", "k", "b"});
    s.Run({"CBF.ADD", "k", "c"});
    RunDurably(*server, s, {"EXEC"});
    std::vector<uint64_t> generations;
    ASSERT_TRUE(ListLogGenerations(*DefaultFileSystem(), config.dir, config.appendfilename,
                                   &generations)
                    .ok());
    path = JoinPath(config.dir, LogFileName(config.appendfilename, generations.back()));
    ASSERT_TRUE(DefaultFileSystem()->FileSize(path, &size).ok());
  }  // kill -9
  // Cut the file a few bytes before its end: inside the last record, the
  // transaction's (or, before units, inside its last command).
  ASSERT_TRUE(DefaultFileSystem()->Truncate(path, size - 5).ok());
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  EXPECT_EQ(s.Run({"EXISTS", "k"}), Int(1)) << "the write before the transaction stays";
  for (const char* item : {"a", "b", "c"}) {
    EXPECT_EQ(s.Run({"CBF.EXISTS", "k", item}), Int(0)) << item << " of a torn transaction";
  }
}

TEST(TransactionUnit, AWholeUnitReplaysEveryWriteInOrder) {
  TempDir dir;
  ServerConfig config = DurableConfigIn(dir, ServerConfig::AppendFsync::kNo);
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    ASSERT_EQ(s.Run({"MULTI"}), kOk);
    s.Run({"CBF.RESERVE", "k", "0.01", "100"});
    s.Run({"CBF.ADD", "k", "a"});
    s.Run({"CBF.ADD", "k", "a"});
    s.Run({"CBF.DEL", "k", "a"});
    RunDurably(*server, s, {"EXEC"});
  }
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  EXPECT_EQ(s.Run({"CBF.COUNT", "k", "a"}), Int(1));
}

}  // namespace
}  // namespace bloomgate::testing
