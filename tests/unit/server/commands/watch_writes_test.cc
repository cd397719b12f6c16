// WATCH against every kind of write that can reach a key, and the one
// moment an EXEC runs at.
//
// Redis's rule: a write command that reaches a key marks it modified
// (signalModifiedKey), whether or not it changed a bit. RedisBloom opens
// its keys with REDISMODULE_WRITE in every write command (BF.ADD, CF.DEL,
// ...), and Redis signals every key so opened when the module closes it, so
// a BF.ADD of an item already present, or a CF.DEL of one that is missing,
// still makes a watcher's EXEC return nil. Reads never do.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

class WatchWrites : public ::testing::Test {
 protected:
  WatchWrites() : server_(MakeServer()), a_(server_.get(), 0), b_(server_.get(), 1) {}

  // Client a WATCHes `key`, client b runs `write` (expecting `reply`), and a
  // runs a transaction of one read: its EXEC reply.
  std::string ExecAfter(const std::string& key, const Args& write, const std::string& reply) {
    EXPECT_EQ(a_.Run({"WATCH", key}), kOk);
    EXPECT_EQ(b_.Run(write), reply) << write[0];
    EXPECT_EQ(a_.Run({"MULTI"}), kOk);
    EXPECT_EQ(a_.Run({"EXISTS", key}), kQueued);
    return a_.Run({"EXEC"});
  }

  std::unique_ptr<ServerContext> server_;
  Session a_;  // watches and runs the transaction
  Session b_;  // writes in between
};

struct ScanDumpReply {
  int64_t iterator = 0;
  std::string data;
};

// One SCANDUMP reply, "*2 :next $data", parsed.
ScanDumpReply ParseScanDumpReply(const std::string& reply) {
  ScanDumpReply chunk;
  EXPECT_EQ(reply.rfind("*2\r\n:", 0), 0u) << reply.substr(0, 80);
  size_t at = 5;
  size_t end = reply.find("\r\n", at);
  chunk.iterator = std::stoll(reply.substr(at, end - at));
  at = end + 2;
  end = reply.find("\r\n", at);
  const size_t length = std::stoull(reply.substr(at + 1, end - at - 1));
  chunk.data = reply.substr(end + 2, length);
  return chunk;
}

TEST_F(WatchWrites, CuckooAddsDeletesAndCompactAbortExec) {
  ASSERT_EQ(a_.Run({"CF.ADD", "cf", "a"}), Int(1));
  EXPECT_EQ(ExecAfter("cf", {"CF.ADD", "cf", "b"}, Int(1)), kNilArray);
  EXPECT_EQ(ExecAfter("cf", {"CF.ADDNX", "cf", "c"}, Int(1)), kNilArray);
  EXPECT_EQ(ExecAfter("cf", {"CF.DEL", "cf", "a"}, Int(1)), kNilArray);
  EXPECT_EQ(ExecAfter("cf", {"CF.COMPACT", "cf"}, kOk), kNilArray);
}

TEST_F(WatchWrites, CountingAddsAndDeletesAbortExec) {
  ASSERT_EQ(a_.Run({"CBF.ADD", "cbf", "a"}), Int(1));
  EXPECT_EQ(ExecAfter("cbf", {"CBF.ADD", "cbf", "a"}, Int(0)), kNilArray);  // a second a
  EXPECT_EQ(ExecAfter("cbf", {"CBF.DEL", "cbf", "a"}, Int(1)), kNilArray);
}

// RedisBloom's write commands signal their key even when nothing changed.
TEST_F(WatchWrites, AWriteThatChangesNothingStillAbortsExecAsInRedisBloom) {
  ASSERT_EQ(a_.Run({"BF.ADD", "bf", "a"}), Int(1));
  ASSERT_EQ(a_.Run({"CF.ADD", "cf", "a"}), Int(1));
  ASSERT_EQ(a_.Run({"CBF.ADD", "cbf", "a"}), Int(1));
  EXPECT_EQ(ExecAfter("bf", {"BF.ADD", "bf", "a"}, Int(0)), kNilArray);
  EXPECT_EQ(ExecAfter("bf", {"BF.MADD", "bf", "a"}, Arr(1) + Int(0)), kNilArray);
  EXPECT_EQ(ExecAfter("cf", {"CF.ADDNX", "cf", "a"}, Int(0)), kNilArray);
  EXPECT_EQ(ExecAfter("cf", {"CF.DEL", "cf", "missing"}, Int(0)), kNilArray);
  EXPECT_EQ(ExecAfter("cbf", {"CBF.DEL", "cbf", "missing"}, Int(0)), kNilArray);
}

TEST_F(WatchWrites, ReadsOfTheWatchedKeyLetExecRun) {
  ASSERT_EQ(a_.Run({"CF.ADD", "cf", "a"}), Int(1));
  ASSERT_EQ(a_.Run({"CBF.ADD", "cbf", "a"}), Int(1));
  EXPECT_EQ(ExecAfter("cf", {"CF.EXISTS", "cf", "a"}, Int(1)), Arr(1) + Int(1));
  EXPECT_EQ(ExecAfter("cf", {"CF.COUNT", "cf", "a"}, Int(1)), Arr(1) + Int(1));
  EXPECT_EQ(ExecAfter("cbf", {"CBF.COUNT", "cbf", "a"}, Int(1)), Arr(1) + Int(1));
  EXPECT_EQ(ExecAfter("cf", {"CF.ADD", "other", "a"}, Int(1)), Arr(1) + Int(1));
}

TEST_F(WatchWrites, AFilterLoadedWithLoadChunkOntoAWatchedKeyAbortsExec) {
  for (std::string prefix : {"BF", "CF"}) {
    SCOPED_TRACE(prefix);
    ASSERT_EQ(a_.Run({prefix + ".ADD", "src", "a"}), Int(1));
    std::vector<ScanDumpReply> chunks;
    for (ScanDumpReply c = ParseScanDumpReply(a_.Run({prefix + ".SCANDUMP", "src", "0"}));
         c.iterator != 0; c = ParseScanDumpReply(
                              a_.Run({prefix + ".SCANDUMP", "src", std::to_string(c.iterator)}))) {
      chunks.push_back(c);
    }
    ASSERT_GE(chunks.size(), 2u);
    ASSERT_EQ(a_.Run({"WATCH", "copy"}), kOk);
    for (const ScanDumpReply& c : chunks) {
      ASSERT_EQ(b_.Run({prefix + ".LOADCHUNK", "copy", std::to_string(c.iterator), c.data}), kOk);
    }
    ASSERT_EQ(a_.Run({prefix + ".EXISTS", "copy", "a"}), Int(1));
    ASSERT_EQ(a_.Run({"MULTI"}), kOk);
    ASSERT_EQ(a_.Run({"EXISTS", "copy"}), kQueued);
    EXPECT_EQ(a_.Run({"EXEC"}), kNilArray);
    ASSERT_EQ(a_.Run({"DEL", "src", "copy"}), Int(2));
  }
}

TEST_F(WatchWrites, AWatchedKeyThatExpiresBeforeExecAbortsItInBothProtocols) {
  for (bool resp3 : {false, true}) {
    a_.set_resp3(resp3);
    // Redis does not abort for a key that was already expired when WATCHed
    // (watchForKey records it as expired), so k must outlive the WATCH: PTTL
    // after the WATCH proves it did. Under a sanitizer the gap between the
    // PEXPIRE and the WATCH can exceed a short TTL, so the TTL grows until
    // it is long enough.
    bool watched_alive = false;
    for (int ttl_ms = 5; ttl_ms <= 5'000 && !watched_alive; ttl_ms *= 10) {
      a_.Run({"DEL", "k"});
      ASSERT_EQ(a_.Run({"CF.ADD", "k", "a"}), resp3 ? kTrue3 : Int(1));
      ASSERT_EQ(a_.Run({"PEXPIRE", "k", std::to_string(ttl_ms)}), Int(1));
      ASSERT_EQ(a_.Run({"WATCH", "k"}), kOk);
      watched_alive = a_.Run({"PTTL", "k"}) != Int(-2);
      if (watched_alive) {
        std::this_thread::sleep_for(std::chrono::milliseconds(ttl_ms + 5));  // deadline passes
      } else {
        ASSERT_EQ(a_.Run({"UNWATCH"}), kOk);
      }
    }
    ASSERT_TRUE(watched_alive);
    ASSERT_EQ(a_.Run({"MULTI"}), kOk);
    ASSERT_EQ(a_.Run({"EXISTS", "k"}), kQueued);
    EXPECT_EQ(a_.Run({"EXEC"}), resp3 ? kNull3 : kNilArray);
  }
}

// Redis runs the commands of an EXEC at the moment the EXEC started (call()
// caches the time once for nested calls): a key whose deadline falls during
// the transaction is alive for all of it or for none of it.
TEST_F(WatchWrites, AnExecSeesOneMomentForExpiry) {
  // A slow command between the deadline and the reads: 100,000 Bloom adds
  // take several ms; the test doubles them until the EXEC took >= 5 ms, so
  // the deadline (1 ms after the PEXPIRE) has surely passed in wall time.
  for (size_t items = 100'000; items <= 1'600'000; items *= 2) {
    ASSERT_EQ(a_.Run({"CBF.ADD", "k", "a"}), Int(1));
    Args slow = {"BF.MADD", "ballast"};
    for (size_t i = 0; i < items; ++i) slow.push_back(std::to_string(i));
    ASSERT_EQ(a_.Run({"MULTI"}), kOk);
    ASSERT_EQ(a_.Run({"PEXPIRE", "k", "1"}), kQueued);
    ASSERT_EQ(a_.Run(slow), kQueued);
    ASSERT_EQ(a_.Run({"CBF.ADD", "k", "b"}), kQueued);
    ASSERT_EQ(a_.Run({"CBF.COUNT", "k", "a"}), kQueued);
    ASSERT_EQ(a_.Run({"PTTL", "k"}), kQueued);
    const auto start = std::chrono::steady_clock::now();
    std::string reply = a_.Run({"EXEC"});
    const auto took = std::chrono::steady_clock::now() - start;
    // The add went into the filter that holds "a", the count found it, and
    // the deadline is still 1 ms away: the moment did not move.
    const std::string tail = Int(1) + Int(1) + Int(1);
    ASSERT_TRUE(reply.starts_with(Arr(5) + Int(1))) << reply.substr(0, 40);
    EXPECT_TRUE(reply.ends_with(tail)) << reply.substr(reply.size() - 40);
    ASSERT_EQ(a_.Run({"DEL", "ballast"}), Int(1));
    if (took >= std::chrono::milliseconds(5)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // k expires before the next try
  }
  FAIL() << "the slow command never took 5 ms";
}

}  // namespace
}  // namespace bloomgate
