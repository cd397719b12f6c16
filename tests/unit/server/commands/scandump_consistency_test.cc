// SCANDUMP under writes and LOADCHUNK under contention (issue 15, bug 5):
// a dump whose filter changed between its calls is refused at LOADCHUNK
// with a text that says to restart it, never loaded torn; BF.SCANDUMP
// reads header and bits at one moment; two clients loading one key end
// with one whole dump or none; an idle staged load is dropped and its
// memory returned.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/base/clock.h"
#include "server/catalogue/family_registry.h"
#include "server/commands/errors.h"
#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

struct Chunk {
  int64_t iterator = 0;
  std::string data;
};

// One SCANDUMP reply, "*2 :next $data", parsed.
Chunk ParseScanDump(const std::string& reply) {
  Chunk chunk;
  EXPECT_EQ(reply.rfind("*2\r\n:", 0), 0u) << reply.substr(0, 80);
  size_t at = 5;
  size_t end = reply.find("\r\n", at);
  chunk.iterator = std::stoll(reply.substr(at, end - at));
  at = end + 2;
  EXPECT_EQ(reply[at], '$') << reply.substr(0, 80);
  end = reply.find("\r\n", at);
  const size_t length = std::stoull(reply.substr(at + 1, end - at - 1));
  chunk.data = reply.substr(end + 2, length);
  return chunk;
}

class ScanDumpConsistency : public ::testing::Test {
 protected:
  ScanDumpConsistency() : server_(MakeServer()), a_(server_.get(), 0), b_(server_.get(), 1) {}

  Chunk ScanDump(std::string_view prefix, const std::string& key, int64_t iterator) {
    return ParseScanDump(
        a_.Run({std::string(prefix) + ".SCANDUMP", key, std::to_string(iterator)}));
  }
  // Every chunk of a dump taken with no write in between.
  std::vector<Chunk> Dump(std::string_view prefix, const std::string& key) {
    std::vector<Chunk> chunks;
    int64_t it = 0;
    for (int n = 0; n < 16; ++n) {
      Chunk chunk = ScanDump(prefix, key, it);
      if (chunk.iterator == 0) return chunks;
      it = chunk.iterator;
      chunks.push_back(std::move(chunk));
    }
    ADD_FAILURE() << "no end within 16 chunks";
    return chunks;
  }
  std::string Load(Session& s, std::string_view prefix, const std::string& key,
                   const Chunk& chunk) {
    return s.Run({std::string(prefix) + ".LOADCHUNK", key, std::to_string(chunk.iterator),
                  chunk.data});
  }
  // `count` distinct items named after `tag`, added one command per 500.
  void Fill(const std::string& add, const std::string& key, const std::string& tag, int count) {
    for (int i = 0; i < count; i += 500) {
      Args args = {add, key};
      if (add == "CF.INSERT") args.push_back("ITEMS");
      for (int j = i; j < std::min(count, i + 500); ++j) {
        args.push_back(tag + ":" + std::to_string(j));
      }
      a_.Run(args);
    }
  }
  // How many of `tag`'s items `key` holds.
  int Members(const std::string& exists, const std::string& key, const std::string& tag,
              int count) {
    int found = 0;
    for (int i = 0; i < count; ++i) {
      found += a_.Run({exists, key, tag + ":" + std::to_string(i)}) == Int(1);
    }
    return found;
  }

  std::unique_ptr<ServerContext> server_;
  Session a_;
  Session b_;
};

// Two cuckoo filters with the same header (shape, items, deletes), so a
// dump switched from one to the other is not told apart by its header: the
// write version is what refuses it. 2^23 buckets of 3 slots are 24 MiB, two
// payload chunks of at most 16 MiB.
TEST_F(ScanDumpConsistency, ADumpWhoseKeyWasReplacedBetweenChunksIsRefusedNotLoadedTorn) {
  const std::string capacity = std::to_string(3 * (1 << 23));
  ASSERT_EQ(a_.Run({"CF.RESERVE", "src", capacity, "BUCKETSIZE", "3"}), kOk);
  ASSERT_EQ(a_.Run({"CF.RESERVE", "other", capacity, "BUCKETSIZE", "3"}), kOk);
  Fill("CF.INSERT", "src", "a", 1000);
  Fill("CF.INSERT", "other", "b", 1000);
  ASSERT_EQ(a_.Run({"CF.INFO", "src"}), a_.Run({"CF.INFO", "other"})) << "same header";

  std::vector<Chunk> chunks;
  chunks.push_back(ScanDump("CF", "src", 0));
  chunks.push_back(ScanDump("CF", "src", chunks.back().iterator));
  ASSERT_EQ(a_.Run({"RENAME", "other", "src"}), kOk);  // between two SCANDUMP calls
  for (Chunk c = ScanDump("CF", "src", chunks.back().iterator); c.iterator != 0;
       c = ScanDump("CF", "src", c.iterator)) {
    chunks.push_back(c);
  }
  ASSERT_GE(chunks.size(), 3u) << "a header and two payload chunks";

  std::vector<std::string> replies;
  for (const Chunk& chunk : chunks) replies.push_back(Load(b_, "CF", "copy", chunk));
  EXPECT_EQ(replies[1], kOk) << "the first payload chunk is of the header's state";
  EXPECT_EQ(replies[2], Err(errors::kDumpChanged))
      << "the chunk after the change is refused, saying to restart";
  EXPECT_EQ(a_.Run({"EXISTS", "copy"}), Int(0)) << "a torn dump creates nothing";

  // Restarted, the dump loads.
  a_.Run({"DEL", "copy"});
  for (const Chunk& chunk : Dump("CF", "src")) ASSERT_EQ(Load(b_, "CF", "copy", chunk), kOk);
  EXPECT_EQ(Members("CF.EXISTS", "copy", "b", 1000), 1000);
}

// A write between SCANDUMP calls that changes the header is refused with
// the same text, for every family.
TEST_F(ScanDumpConsistency, AWriteBetweenScanDumpCallsIsRefusedWithTheRestartText) {
  struct Family {
    std::string prefix, reserve_capacity, add;
  };
  for (const Family& f : {Family{"BF", "1000", "BF.ADD"}, Family{"CF", "1000", "CF.ADD"},
                          Family{"CBF", "1000", "CBF.ADD"}}) {
    SCOPED_TRACE(f.prefix);
    Args reserve = {f.prefix + ".RESERVE", "k"};
    if (f.prefix != "CF") reserve.push_back("0.01");
    reserve.push_back(f.reserve_capacity);
    ASSERT_EQ(a_.Run(reserve), kOk);
    ASSERT_EQ(a_.Run({f.add, "k", "first"}), Int(1));
    const Chunk header = ScanDump(f.prefix, "k", 0);
    ASSERT_EQ(b_.Run({f.add, "k", "second"}), Int(1));
    const Chunk payload = ScanDump(f.prefix, "k", header.iterator);
    ASSERT_EQ(Load(b_, f.prefix, "copy", header), kOk);
    EXPECT_EQ(Load(b_, f.prefix, "copy", payload), Err(errors::kDumpChanged));
    EXPECT_EQ(a_.Run({"EXISTS", "copy"}), Int(0));
    // The staged load stays: the right chunk may still follow, and a
    // restarted dump replaces it.
    for (const Chunk& chunk : Dump(f.prefix, "k")) {
      ASSERT_EQ(Load(b_, f.prefix, "copy", chunk), kOk);
    }
    EXPECT_EQ(a_.Run({f.prefix + ".EXISTS", "copy", "second"}), Int(1));
    a_.Run({"DEL", "k", "copy"});
  }
}

// BF.ADDs share their key's lock (they commute); BF.SCANDUMP must not run
// beside one, or its chunk could hold bits of an add its header does not
// count. Here the test holds the key's lock as a running BF.ADD does.
TEST_F(ScanDumpConsistency, BloomScanDumpWaitsForAddsRunningOnItsKey) {
  ASSERT_EQ(a_.Run({"BF.ADD", "k", "x"}), Int(1));
  std::optional<KeyLocks::Guard> add_running;
  add_running.emplace(
      server_->key_locks.Lock({KeyLocks::StripeOf(std::string_view("k"))}, /*exclusive=*/false));
  std::atomic<bool> done{false};
  std::string reply;
  std::thread dumper([&] {
    reply = b_.Run({"BF.SCANDUMP", "k", "1"});
    done.store(true, std::memory_order_release);
  });
  // Generous: a dump that did not wait is done within microseconds.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const bool finished_beside_the_add = done.load(std::memory_order_acquire);
  add_running.reset();
  dumper.join();
  EXPECT_FALSE(finished_beside_the_add) << "BF.SCANDUMP ran while an add held its key";
  EXPECT_TRUE(done.load());
  EXPECT_EQ(reply.rfind("*2\r\n", 0), 0u) << reply.substr(0, 40);
  // Reads of other kinds still share the key with adds.
  add_running.emplace(
      server_->key_locks.Lock({KeyLocks::StripeOf(std::string_view("k"))}, /*exclusive=*/false));
  EXPECT_EQ(a_.Run({"BF.EXISTS", "k", "x"}), Int(1));
  add_running.reset();
}

// Two clients replay different dumps into one key at once, chunk by chunk
// interleaved: the later header takes over the staged load, the other
// client's chunks are refused, and the key ends as one whole dump.
TEST_F(ScanDumpConsistency, TwoClientsLoadingOneKeyEndWithOneWholeDump) {
  ASSERT_EQ(a_.Run({"CBF.RESERVE", "one", "0.01", "500"}), kOk);
  ASSERT_EQ(a_.Run({"CBF.RESERVE", "two", "0.01", "500"}), kOk);
  Fill("CBF.MADD", "one", "one", 300);
  Fill("CBF.MADD", "two", "two", 300);
  const std::vector<Chunk> one = Dump("CBF", "one");
  const std::vector<Chunk> two = Dump("CBF", "two");
  ASSERT_EQ(one.size(), 2u);
  ASSERT_EQ(two.size(), 2u);

  EXPECT_EQ(Load(a_, "CBF", "dst", one[0]), kOk);
  EXPECT_EQ(Load(b_, "CBF", "dst", two[0]), kOk);  // takes the staged load over
  EXPECT_EQ(Load(a_, "CBF", "dst", one[1]), Err(errors::kDumpChanged));
  EXPECT_EQ(a_.Run({"EXISTS", "dst"}), Int(0));
  EXPECT_EQ(Load(b_, "CBF", "dst", two[1]), kOk);
  EXPECT_EQ(Members("CBF.EXISTS", "dst", "two", 300), 300);
  EXPECT_EQ(a_.Run({"CBF.INFO", "dst"}), a_.Run({"CBF.INFO", "two"}));
  // The loser's retry cannot overwrite the finished filter.
  EXPECT_EQ(Load(a_, "CBF", "dst", one[0]), Err(errors::kItemExists));
  EXPECT_EQ(Load(a_, "CBF", "dst", one[1]), Err(errors::kReceivedBadData));
  EXPECT_EQ(a_.Run({"CBF.INFO", "dst"}), a_.Run({"CBF.INFO", "two"}));
}

// Two clients replaying the same dump at once: still one whole copy.
TEST_F(ScanDumpConsistency, TwoClientsLoadingTheSameDumpAtOnceMakeOneCopy) {
  ASSERT_EQ(a_.Run({"CF.RESERVE", "src", "1000"}), kOk);
  Fill("CF.INSERT", "src", "x", 400);
  const std::vector<Chunk> chunks = Dump("CF", "src");
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(Load(a_, "CF", "dst", chunks[0]), kOk);
  EXPECT_EQ(Load(b_, "CF", "dst", chunks[0]), kOk);
  EXPECT_EQ(Load(a_, "CF", "dst", chunks[1]), kOk);  // completes b's (identical) load
  EXPECT_EQ(Load(b_, "CF", "dst", chunks[1]), Err(errors::kCfCouldNotLoadChunk));
  EXPECT_EQ(a_.Run({"CF.INFO", "dst"}), a_.Run({"CF.INFO", "src"}));
  EXPECT_EQ(Members("CF.EXISTS", "dst", "x", 400), 400);
}

// A staged load that receives no chunk for kStagedLoadIdleMs is dropped
// (the server's timer calls DropIdle) and its memory returns to the budget.
TEST_F(ScanDumpConsistency, AnIdleStagedLoadIsDroppedAndItsMemoryReturned) {
  ASSERT_EQ(a_.Run({"BF.RESERVE", "src", "0.01", "100000"}), kOk);
  Fill("BF.MADD", "src", "x", 100);
  const std::vector<Chunk> chunks = Dump("BF", "src");
  ASSERT_EQ(chunks.size(), 2u);
  const uint64_t before = server_->budget.used();
  const int64_t start = NowMs();
  ASSERT_EQ(Load(b_, "BF", "dst", chunks[0]), kOk);
  EXPECT_GT(server_->budget.used(), before) << "the staged filter is charged";
  EXPECT_EQ(server_->chunk_staging.size(), 1u);

  EXPECT_EQ(server_->chunk_staging.DropIdle(start + ChunkStaging::kStagedLoadIdleMs - 1000), 0u)
      << "not idle long enough";
  EXPECT_EQ(server_->chunk_staging.size(), 1u);
  EXPECT_EQ(server_->chunk_staging.DropIdle(NowMs() + ChunkStaging::kStagedLoadIdleMs + 1), 1u);
  EXPECT_EQ(server_->chunk_staging.size(), 0u);
  EXPECT_EQ(server_->budget.used(), before) << "the dropped load's memory is returned";
  EXPECT_EQ(Load(b_, "BF", "dst", chunks[1]), Err(errors::kNotFound))
      << "its next chunk finds no load";
  EXPECT_EQ(a_.Run({"EXISTS", "dst"}), Int(0));
}

// Which kinds a group's SCANDUMP and LOADCHUNK serve is the family
// registry's: every family registered under the group (BF.*: the scalable
// and the windowed Bloom filter) dumps and loads through them, and no other
// group's commands read it.
TEST_F(ScanDumpConsistency, EveryFamilyOfAGroupMovesThroughItsGroupsChunkCommands) {
  const std::map<FilterKind, Args> create = {
      {FilterKind::kScalableBloom, {"BF.RESERVE", "src", "0.01", "100"}},
      {FilterKind::kWindowedBloom, {"BF.RESERVE", "src", "0.01", "100", "WINDOW", "60"}},
      {FilterKind::kCountingBloom, {"CBF.RESERVE", "src", "0.01", "100"}},
      {FilterKind::kWindowedCountingBloom, {"CBF.RESERVE", "src", "0.01", "100", "WINDOW", "60"}},
      {FilterKind::kCuckoo, {"CF.RESERVE", "src", "100"}},
      {FilterKind::kCountMinSketch, {"CMS.INITBYDIM", "src", "10", "2"}},
      {FilterKind::kTopK, {"TOPK.RESERVE", "src", "3"}},
  };
  std::vector<std::string> groups;  // the groups whose rows include SCANDUMP
  for (const FilterFamily* family : RegisteredFamilies()) {
    if (family->commands == nullptr) continue;
    if (a_.Run({std::string(family->group) + ".SCANDUMP", "none", "0"}) ==
        Err(errors::kNotFound)) {
      groups.emplace_back(family->group);
    }
  }
  ASSERT_GE(groups.size(), 5u);
  for (const FilterFamily* family : RegisteredFamilies()) {
    const std::string group(family->group);
    if (std::find(groups.begin(), groups.end(), group) == groups.end()) continue;
    SCOPED_TRACE(std::string(family->type_name));
    auto how = create.find(family->kind);
    ASSERT_NE(how, create.end()) << "add how this test creates a " << family->type_name;
    a_.Run({"FLUSHALL"});
    ASSERT_EQ(a_.Run(how->second), kOk);
    ASSERT_EQ(a_.Run({"TYPE", "src"}), Simple(family->type_name));
    const std::vector<Chunk> chunks = Dump(group, "src");
    ASSERT_FALSE(chunks.empty());
    for (const Chunk& chunk : chunks) ASSERT_EQ(Load(b_, group, "dst", chunk), kOk);
    EXPECT_EQ(a_.Run({"TYPE", "dst"}), Simple(family->type_name));
    for (const std::string& other : groups) {
      if (other == group) continue;
      EXPECT_EQ(a_.Run({other + ".SCANDUMP", "src", "0"}), Err(errors::kWrongType)) << other;
      Load(b_, other, "dst2", chunks[0]);
      EXPECT_EQ(a_.Run({"EXISTS", "dst2"}), Int(0)) << other << " loaded a " << group << " header";
    }
  }
}

}  // namespace
}  // namespace bloomgate
