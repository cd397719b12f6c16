// The journal as a stream: offsets minted at publish, one total order over
// every key, what each origin publishes, the one admission rule, and
// waiting for "offset X satisfied".
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../decoding_subscriber.h"
#include "persistence/append_log.h"
#include "server/durability/journal.h"
#include "../session.h"

namespace bloomgate::testing {
namespace {

// Keeps every record's offset and bytes; acknowledges what it is asked to.
class StreamTap : public JournalSubscriber {
 public:
  bool accepting() const override { return true; }
  void OnRecord(const JournalRecord& record) override {
    std::lock_guard lock(mutex_);
    offsets_.push_back(record.offset);
    bytes_.emplace_back(record.bytes);
  }
  bool acknowledges() const override { return true; }
  Status AwaitOffset(uint64_t offset) override {
    std::lock_guard lock(mutex_);
    awaited_.push_back(offset);
    return Status::Ok();
  }
  std::vector<uint64_t> offsets() {
    std::lock_guard lock(mutex_);
    return offsets_;
  }
  std::vector<std::string> bytes() {
    std::lock_guard lock(mutex_);
    return bytes_;
  }
  std::vector<uint64_t> awaited() {
    std::lock_guard lock(mutex_);
    return awaited_;
  }

 private:
  std::mutex mutex_;
  std::vector<uint64_t> offsets_;
  std::vector<std::string> bytes_;
  std::vector<uint64_t> awaited_;
};

class JournalStream : public ::testing::Test {
 protected:
  void SetUp() override { server_->journal.Subscribe(&tap_); }
  void TearDown() override { server_->journal.Unsubscribe(&tap_); }
  std::unique_ptr<ServerContext> server_ = MakeServer({}, /*workers=*/4);
  StreamTap tap_;
};

TEST_F(JournalStream, EachRecordsOffsetIsTheStreamsByteCountJustPastIt) {
  Session a(server_.get());
  Session b(server_.get());
  ASSERT_EQ(a.Run({"CBF.RESERVE", "x", "0.01", "100"}), kOk);
  ASSERT_EQ(b.Run({"CBF.RESERVE", "y", "0.01", "100"}), kOk);
  a.Run({"CBF.ADD", "x", "1"});
  b.Run({"CBF.ADD", "y", "2"});
  a.Run({"DEL", "y"});
  const std::vector<uint64_t> offsets = tap_.offsets();
  const std::vector<std::string> bytes = tap_.bytes();
  ASSERT_EQ(offsets.size(), 5u);
  uint64_t total = 0;
  for (size_t i = 0; i < offsets.size(); ++i) {
    total += bytes[i].size();
    EXPECT_EQ(offsets[i], total) << "record " << i;
    LogRecord decoded;
    EXPECT_EQ(DecodeLogRecord(bytes[i], &decoded), "") << "the log's framing is the wire format";
  }
  EXPECT_EQ(server_->journal.offset(), total);
  // Each session remembers the offset its replies wait for.
  EXPECT_EQ(a.client().journal.offset, offsets[4]);
  EXPECT_EQ(b.client().journal.offset, offsets[3]);
}

TEST_F(JournalStream, ConcurrentWritersGetOneTotalOrder) {
  constexpr int kWriters = 4;
  constexpr int kWrites = 200;
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([this, w] {
      Session s(server_.get(), static_cast<size_t>(w));
      for (int i = 0; i < kWrites; ++i) {
        s.Run({"BF.ADD", "key" + std::to_string(w), std::to_string(i)});
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::vector<uint64_t> offsets = tap_.offsets();
  const std::vector<std::string> bytes = tap_.bytes();
  ASSERT_EQ(offsets.size(), static_cast<size_t>(kWriters * (kWrites + 1)));  // + each creation
  uint64_t total = 0;
  for (size_t i = 0; i < offsets.size(); ++i) {
    total += bytes[i].size();
    ASSERT_EQ(offsets[i], total) << "subscribers see records in offset order, no gaps";
  }
}

TEST_F(JournalStream, TheReplyWaitsForItsOffsetAtTheAcknowledgingSubscribers) {
  Session s(server_.get());
  s.Run({"BF.ADD", "k", "a"});
  const uint64_t offset = s.client().journal.offset;
  ASSERT_GT(offset, 0u);
  ASSERT_TRUE(server_->journal.AwaitForReply(s.client().journal).ok());
  EXPECT_EQ(s.client().journal.offset, 0u) << "nothing left to wait for";
  ASSERT_FALSE(tap_.awaited().empty());
  EXPECT_EQ(tap_.awaited().back(), offset);
  s.Run({"BF.EXISTS", "k", "a"});
  EXPECT_EQ(s.client().journal.offset, 0u) << "a read publishes nothing";
}

TEST_F(JournalStream, StartupReplayPublishesNothingAReplicasStreamIsJournaledAgain) {
  Session replay(server_.get());
  replay.client().journal.origin = JournalOrigin::kStartupReplay;
  replay.client().replay_time_ms = NowMs();
  EXPECT_EQ(replay.Run({"CBF.RESERVE", "r", "0.01", "100"}), kOk);
  EXPECT_TRUE(tap_.offsets().empty());
  Session replica(server_.get());
  replica.client().journal.origin = JournalOrigin::kReplication;
  replica.client().replay_time_ms = NowMs();
  EXPECT_EQ(replica.Run({"CBF.RESERVE", "q", "0.01", "100"}), kOk);
  EXPECT_EQ(tap_.offsets().size(), 1u);
}

TEST_F(JournalStream, EachOriginHasItsOwnPolicy) {
  // The rows that differ between a replica's stream and start-up replay.
  EXPECT_TRUE(PolicyOf(JournalOrigin::kReplication).journaled);
  EXPECT_FALSE(PolicyOf(JournalOrigin::kStartupReplay).journaled);
  EXPECT_TRUE(PolicyOf(JournalOrigin::kReplication).refused_while_loading);
  EXPECT_FALSE(PolicyOf(JournalOrigin::kStartupReplay).refused_while_loading);
  // Neither is judged again, nor paused, nor parked.
  for (JournalOrigin origin : {JournalOrigin::kReplication, JournalOrigin::kStartupReplay}) {
    EXPECT_FALSE(PolicyOf(origin).judged_by_limits);
    EXPECT_FALSE(PolicyOf(origin).checks_acl);
    EXPECT_FALSE(PolicyOf(origin).pausable);
    EXPECT_FALSE(PolicyOf(origin).may_park);
    EXPECT_TRUE(PolicyOf(origin).recorded_clock);
  }
  EXPECT_TRUE(PolicyOf(JournalOrigin::kClient).judged_by_limits);
}

TEST_F(JournalStream, AdmissionIsOneQuestionToTheJournal) {
  JournalSession client;
  JournalSession replay{.origin = JournalOrigin::kStartupReplay};
  EXPECT_TRUE(server_->journal.CanTake(client, kMaxLogRecordBodyBytes));
  EXPECT_FALSE(server_->journal.CanTake(client, kMaxLogRecordBodyBytes + 1));
  EXPECT_TRUE(server_->journal.CanTake(replay, kMaxLogRecordBodyBytes + 1))
      << "a write that is not journaled needs no room in the stream";
  server_->journal.Unsubscribe(&tap_);
  // With the log off (appendonly no in MakeServer) nobody takes records.
  EXPECT_TRUE(server_->journal.CanTake(client, kMaxLogRecordBodyBytes + 1));
  server_->journal.Subscribe(&tap_);
}

TEST_F(JournalStream, TheBarrierTellsTheOffsetTheNextRecordStartsAt) {
  Session s(server_.get());
  s.Run({"BF.ADD", "k", "a"});
  uint64_t at = 0;
  server_->journal.AtBarrier([&at](uint64_t next) { at = next; });
  EXPECT_EQ(at, tap_.offsets().back());
  s.Run({"BF.ADD", "k", "b"});
  EXPECT_EQ(tap_.offsets().back(), at + tap_.bytes().back().size());
}

// Writers publishing on every worker while `during` runs, then a few more
// writes each, so whatever `during` did is surrounded by publishes.
template <typename During>
void WhileWritersPublish(ServerContext& server, During&& during) {
  constexpr int kWriters = 3;
  std::atomic<bool> stop{false};
  std::atomic<int> started{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      Session s(&server, static_cast<size_t>(w));
      const std::string key = "key" + std::to_string(w);
      for (int i = 0; !stop.load() || i < 400; ++i) {
        s.Run({"BF.ADD", key, std::to_string(i)});
        if (i == 50) started.fetch_add(1);
      }
    });
  }
  while (started.load() < kWriters) std::this_thread::yield();
  during();
  stop.store(true);
  for (std::thread& writer : writers) writer.join();
}

// A subscriber that joins while writers publish gets exactly the records
// that start at the offset Join returned: none before it, none lost, none
// twice, in offset order (what a full sync's stream needs after its cut).
TEST_F(JournalStream, ASubscriberJoinedWhileWritersPublishGetsExactlyTheRecordsAfterItsOffset) {
  StreamTap late;
  std::optional<uint64_t> start;
  uint64_t at_barrier = 0;
  WhileWritersPublish(*server_, [&] {
    start = server_->journal.Join(&late, [&at_barrier](uint64_t next) { at_barrier = next; });
  });
  ASSERT_TRUE(start.has_value());
  EXPECT_EQ(at_barrier, *start) << "the hook runs at the join's own barrier";
  server_->journal.Unsubscribe(&late);
  const std::vector<uint64_t> all_offsets = tap_.offsets();
  const std::vector<std::string> all_bytes = tap_.bytes();
  std::vector<std::string> expected;
  for (size_t i = 0; i < all_offsets.size(); ++i) {
    if (all_offsets[i] - all_bytes[i].size() >= *start) expected.push_back(all_bytes[i]);
  }
  ASSERT_GT(*start, 0u) << "joined after the first records";
  ASSERT_FALSE(expected.empty()) << "and before the last";
  EXPECT_EQ(late.bytes(), expected);
  const std::vector<uint64_t> offsets = late.offsets();
  const std::vector<std::string> bytes = late.bytes();
  uint64_t next = *start;
  for (size_t i = 0; i < offsets.size(); ++i) {
    next += bytes[i].size();
    ASSERT_EQ(offsets[i], next) << "contiguous from the join's offset, record " << i;
  }
}

// Subscribers come and go while writers publish and every write asks
// active(): the list is read without a lock, so this is where TSan would
// see a torn read if a slot were not atomic.
TEST_F(JournalStream, SubscribersJoinAndLeaveWhileWritersPublish) {
  std::vector<StreamTap> taps(Journal::kMaxSubscribers);
  // Fills every free slot (the fixture's tap and Durability hold two).
  const auto join_all = [&] {
    size_t joined = 0;
    while (joined < taps.size() && server_->journal.Join(&taps[joined]).has_value()) ++joined;
    return joined;
  };
  const auto leave = [&](size_t joined) {
    for (size_t i = 0; i < joined; ++i) server_->journal.Unsubscribe(&taps[i]);
  };
  WhileWritersPublish(*server_, [&] {
    for (int round = 0; round < 50; ++round) leave(join_all());
  });
  const size_t joined = join_all();
  EXPECT_GT(joined, 0u);
  EXPECT_LT(joined, taps.size()) << "a full list refuses the next one";
  EXPECT_FALSE(server_->journal.Join(&taps.back()).has_value());
  leave(joined);
  const std::vector<uint64_t> offsets = tap_.offsets();
  const std::vector<std::string> bytes = tap_.bytes();
  uint64_t total = 0;
  for (size_t i = 0; i < offsets.size(); ++i) {
    total += bytes[i].size();
    ASSERT_EQ(offsets[i], total) << "the stream stays whole for the subscriber that stayed";
  }
}
}  // namespace
}  // namespace bloomgate::testing
