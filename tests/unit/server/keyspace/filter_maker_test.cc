// Big filters are built off the event loop (server/keyspace/filter_maker.h):
// the creating command parks, the maker builds, the command's second run
// publishes what was made; small ones, replays and EXEC build inline, and a
// made filter nobody takes is freed, not leaked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../../config/temp_dir.h"
#include "../durable_session.h"
#include "server/commands/errors.h"
#include "server/keyspace/filter_maker.h"
#include "../session.h"

namespace bloomgate::testing {
namespace {

// 1,000,000 heap slots of 40 bytes: ~40 MB, far above FilterMaker::kInlineBytes.
constexpr const char* kBigTopK = "1000000";

// One dispatch of `args` as the connection makes it, without waiting.
CommandOutcome DispatchOnce(ServerContext& server, ClientState& client, const Args& args,
                            std::string* out) {
  std::vector<std::string_view> views(args.begin(), args.end());
  ReplyBuilder reply(out);
  return DispatchCommand(server, client, views, reply);
}

// The bytes this process holds resident (/proc/self/statm), or 0 if unreadable.
uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

class FilterMakerTest : public ::testing::Test {
 protected:
  void SetUp() override { SetFilterMaker(&maker_); }
  // ~FilterMaker uninstalls it.

  std::unique_ptr<ServerContext> server_ = MakeServer();
  FilterMaker maker_;
};

TEST_F(FilterMakerTest, ABigReserveParksAndItsSecondRunPublishesTheFilterMadeOffTheLoop) {
  Session s(server_.get());
  const uint64_t used = server_->budget.used();
  ASSERT_EQ(s.Run({"TOPK.RESERVE", "k", kBigTopK}), kOk);
  EXPECT_EQ(s.makes(), 1u) << "the command waited for the maker";
  EXPECT_EQ(maker_.made(), 1u) << "the maker's thread built it";
  EXPECT_EQ(s.client().making, nullptr) << "the second run took the filter";
  EXPECT_GT(server_->budget.used(), used + 40'000'000) << "charged to maxmemory";
  EXPECT_EQ(s.Run({"TOPK.ADD", "k", "a"}), Arr(1) + kNil);
  EXPECT_EQ(s.Run({"TOPK.QUERY", "k", "a"}), Arr(1) + Int(1));
  // The same for the other families whose creation is the handler's.
  ASSERT_EQ(s.Run({"CF.RESERVE", "c", "16777216"}), kOk);
  ASSERT_EQ(s.Run({"CMS.INITBYDIM", "m", "1000000", "4"}), kOk);
  // BF.RESERVE at 0.0001 for 10 million items: ~24 MB.
  ASSERT_EQ(s.Run({"BF.RESERVE", "b", "0.0001", "10000000"}), kOk);
  EXPECT_EQ(s.makes(), 4u);
  EXPECT_EQ(s.Run({"BF.ADD", "b", "x"}), Int(1));
  EXPECT_EQ(s.Run({"BF.RESERVE", "b", "0.0001", "10000000"}), Err(errors::kItemExists));
  EXPECT_EQ(s.makes(), 4u) << "an existing key is refused before anything is built";
  EXPECT_EQ(s.Run({"CF.ADD", "c", "x"}), Int(1));
  EXPECT_EQ(s.Run({"CF.EXISTS", "c", "x"}), Int(1));
  EXPECT_EQ(s.Run({"CMS.INCRBY", "m", "x", "3"}), Arr(1) + Int(3));
  // A park is not a call: INFO commandstats counts each RESERVE once.
  const CommandSpec* reserve = server_->commands.Find("topk.reserve");
  ASSERT_NE(reserve, nullptr);
  EXPECT_EQ(server_->stats.worker(0).commands[reserve->id].calls.load(), 1u);
}

TEST_F(FilterMakerTest, SmallFiltersReplaysAndTransactionsBuildInline) {
  Session s(server_.get());
  ASSERT_EQ(s.Run({"TOPK.RESERVE", "small", "10"}), kOk);
  ASSERT_EQ(s.Run({"CF.RESERVE", "c", "1024"}), kOk);
  EXPECT_EQ(s.makes(), 0u) << "under 1 MiB nothing parks";
  // A transaction cannot park half-way: EXEC builds in place.
  ASSERT_EQ(s.Run({"MULTI"}), kOk);
  ASSERT_EQ(s.Run({"TOPK.RESERVE", "k", kBigTopK}), kQueued);
  ASSERT_EQ(s.Run({"TOPK.ADD", "k", "a"}), kQueued);
  EXPECT_EQ(s.Run({"EXEC"}), Arr(2) + kOk + Arr(1) + kNil);
  EXPECT_EQ(s.makes(), 0u);
  EXPECT_EQ(maker_.made(), 0u);
  // A replay of the journal has no client to park.
  Session replay(server_.get());
  replay.client().journal.origin = JournalOrigin::kStartupReplay;
  replay.client().replay_time_ms = NowMs();
  EXPECT_EQ(replay.Run({"CMS.INITBYDIM", "m", "1000000", "4"}), kOk);
  EXPECT_EQ(replay.makes(), 0u);
  EXPECT_EQ(maker_.made(), 0u);
}

TEST_F(FilterMakerTest, AKeyCreatedWhileTheFilterIsMadeWinsAndTheMadeFilterIsFreed) {
  Session creator(server_.get());
  Session other(server_.get());
  const uint64_t used = server_->budget.used();
  std::string out;
  ASSERT_EQ(DispatchOnce(*server_, creator.client(), {"TOPK.RESERVE", "k", kBigTopK}, &out),
            CommandOutcome::kParked);
  EXPECT_EQ(out, "") << "a parked command replies nothing";
  ASSERT_NE(creator.client().making, nullptr);
  EXPECT_EQ(server_->keyspace.Find("k", NowMs()), nullptr) << "nothing is published yet";
  ASSERT_EQ(other.Run({"TOPK.RESERVE", "k", "3"}), kOk);
  creator.client().making->Make();
  const uint64_t small_and_made = server_->budget.used();
  EXPECT_GT(small_and_made, used + 40'000'000);
  EXPECT_EQ(DispatchOnce(*server_, creator.client(), {"TOPK.RESERVE", "k", kBigTopK}, &out),
            CommandOutcome::kFailed);
  EXPECT_EQ(out, Err(errors::kTopKKeyExists));
  EXPECT_EQ(creator.client().making, nullptr);
  server_->lazy_freer.WaitIdle();
  EXPECT_LT(server_->budget.used(), used + (1 << 20)) << "the made filter was freed";
  EXPECT_LT(server_->keyspace.Find("k", NowMs())->MemoryUsage(), 1u << 20)
      << "the key holds the other client's small filter";
}

TEST_F(FilterMakerTest, ABigCfInsertCapacityIsMadeOffTheLoopAndAKeyCreatedMeanwhileTakesItsItems) {
  Session s(server_.get());
  // 16 MiB of slots, zeroed when made: built by the maker, as CF.RESERVE's.
  EXPECT_EQ(s.Run({"CF.INSERT", "c", "CAPACITY", "16777216", "ITEMS", "x", "y"}),
            Arr(2) + Int(1) + Int(1));
  EXPECT_EQ(s.makes(), 1u);
  EXPECT_EQ(maker_.made(), 1u);
  EXPECT_EQ(s.Run({"CF.EXISTS", "c", "x"}), Int(1));
  EXPECT_GT(server_->keyspace.Find("c", NowMs())->MemoryUsage(), 16'000'000u);
  // On an existing key CAPACITY is ignored: nothing is made.
  EXPECT_EQ(s.Run({"CF.INSERT", "c", "CAPACITY", "16777216", "ITEMS", "z"}), Arr(1) + Int(1));
  EXPECT_EQ(s.makes(), 1u);
  // Another client creates the key while the filter is made: its filter
  // takes the items and the made one is freed.
  Session creator(server_.get());
  Session other(server_.get());
  const uint64_t used = server_->budget.used();
  std::string out;
  const Args insert = {"CF.INSERT", "d", "CAPACITY", "16777216", "ITEMS", "x"};
  ASSERT_EQ(DispatchOnce(*server_, creator.client(), insert, &out), CommandOutcome::kParked);
  EXPECT_EQ(out, "");
  ASSERT_EQ(other.Run({"CF.RESERVE", "d", "1024"}), kOk);
  creator.client().making->Make();
  EXPECT_EQ(DispatchOnce(*server_, creator.client(), insert, &out), CommandOutcome::kDone);
  EXPECT_EQ(out, Arr(1) + Int(1));
  EXPECT_EQ(creator.client().making, nullptr);
  server_->lazy_freer.WaitIdle();
  EXPECT_LT(server_->budget.used(), used + (1 << 20)) << "the made filter was freed";
  EXPECT_EQ(other.Run({"CF.EXISTS", "d", "x"}), Int(1));
  EXPECT_LT(server_->keyspace.Find("d", NowMs())->MemoryUsage(), 1u << 20)
      << "the key holds the other client's small filter";
}

TEST_F(FilterMakerTest, ABigCopyIsMadeOffTheLoopAsTheSourceWasWhenItRan) {
  Session s(server_.get());
  ASSERT_EQ(s.Run({"CF.RESERVE", "src", "16777216"}), kOk);
  ASSERT_EQ(s.Run({"CF.ADD", "src", "x"}), Int(1));
  const uint64_t makes = s.makes();
  const uint64_t used = server_->budget.used();
  EXPECT_EQ(s.Run({"COPY", "src", "dst"}), Int(1));
  EXPECT_EQ(s.makes(), makes + 1) << "the copy waited for the maker";
  EXPECT_GT(server_->budget.used(), used + 16'000'000) << "the copy is charged";
  EXPECT_EQ(s.Run({"CF.EXISTS", "dst", "x"}), Int(1));
  EXPECT_FALSE(server_->keyspace.Find("src", NowMs())->snapshot_copy_owed());
  // A small source is copied inline.
  ASSERT_EQ(s.Run({"CF.RESERVE", "small", "1024"}), kOk);
  EXPECT_EQ(s.Run({"COPY", "small", "small2"}), Int(1));
  EXPECT_EQ(s.makes(), makes + 1);
}

TEST_F(FilterMakerTest, AWriteToTheSourceWhileACopyIsOwedWaitsAndOneAfterItCopiesAgain) {
  Session creator(server_.get());
  Session writer(server_.get());
  ASSERT_EQ(creator.Run({"CF.RESERVE", "src", "16777216"}), kOk);
  std::string out;
  const Args copy = {"COPY", "src", "dst"};
  ASSERT_EQ(DispatchOnce(*server_, creator.client(), copy, &out), CommandOutcome::kParked);
  EXPECT_TRUE(server_->keyspace.Find("src", NowMs())->snapshot_copy_owed())
      << "the source's writers must wait for the copy";
  // This write parks for the owed copy (made by the snapshot copier here),
  // so the copy holds the source as COPY's first run saw it.
  EXPECT_EQ(writer.Run({"CF.ADD", "src", "before"}), Int(1));
  EXPECT_EQ(writer.parks(), 1u);
  creator.client().making->Make();  // finds the copy made
  // ... but the source changed since: the second run copies again.
  EXPECT_EQ(DispatchOnce(*server_, creator.client(), copy, &out), CommandOutcome::kParked);
  EXPECT_EQ(out, "");
  creator.client().making->Make();
  ASSERT_EQ(DispatchOnce(*server_, creator.client(), copy, &out), CommandOutcome::kDone);
  EXPECT_EQ(out, Int(1));
  EXPECT_EQ(writer.Run({"CF.EXISTS", "dst", "before"}), Int(1))
      << "the copy is of the source the journal shows before COPY";
  // Nothing stays owed or charged beyond the two filters.
  server_->lazy_freer.WaitIdle();
  EXPECT_FALSE(server_->keyspace.Find("src", NowMs())->snapshot_copy_owed());
  EXPECT_LT(server_->budget.used(), 2 * 16'900'000u);
}

TEST_F(FilterMakerTest, ACopyWhoseClientLeftIsFreedAndTheSourceIsNotLeftOwed) {
  Session creator(server_.get());
  ASSERT_EQ(creator.Run({"CF.RESERVE", "src", "16777216"}), kOk);
  const uint64_t used = server_->budget.used();
  std::string out;
  ASSERT_EQ(DispatchOnce(*server_, creator.client(), {"COPY", "src", "dst"}, &out),
            CommandOutcome::kParked);
  std::shared_ptr<MadeFilter> making = std::move(creator.client().making);
  making->Make();  // the maker runs what was queued
  making.reset();  // the connection is gone: nothing takes it
  server_->lazy_freer.WaitIdle();
  EXPECT_EQ(server_->budget.used(), used);
  EXPECT_FALSE(server_->keyspace.Find("src", NowMs())->snapshot_copy_owed());
  EXPECT_EQ(server_->keyspace.Find("dst", NowMs()), nullptr);
}

// The iterator and data of a SCANDUMP reply, *2 :<it> $<len> <data>.
std::pair<std::string, std::string> FirstChunk(const std::string& reply) {
  const size_t colon = reply.find(':');
  const size_t it_end = reply.find("\r\n", colon);
  const size_t dollar = reply.find('$', it_end);
  const size_t data = reply.find("\r\n", dollar) + 2;
  const size_t length = std::stoull(reply.substr(dollar + 1, data - 2 - dollar - 1));
  return {reply.substr(colon + 1, it_end - colon - 1), reply.substr(data, length)};
}

TEST_F(FilterMakerTest, ALoadchunkHeaderIsReadOffTheLoopAndAKeyCreatedMeanwhileWins) {
  Session s(server_.get());
  ASSERT_EQ(s.Run({"CF.RESERVE", "src", "16777216"}), kOk);
  const auto [iterator, header] = FirstChunk(s.Run({"CF.SCANDUMP", "src", "0"}));
  ASSERT_LT(header.size(), 1000u) << "a small header that declares 16 MiB of slots";
  const uint64_t makes = s.makes();
  const uint64_t used = server_->budget.used();
  EXPECT_EQ(s.Run({"CF.LOADCHUNK", "dst", iterator, header}), kOk);
  EXPECT_EQ(s.makes(), makes + 1) << "the header was read by the maker";
  EXPECT_GT(server_->budget.used(), used + 16'000'000) << "the staged load is charged";
  // Another client takes the key while the header is read: it wins.
  Session loader(server_.get());
  Session other(server_.get());
  std::string out;
  const Args load = {"CF.LOADCHUNK", "taken", iterator, header};
  ASSERT_EQ(DispatchOnce(*server_, loader.client(), load, &out), CommandOutcome::kParked);
  ASSERT_EQ(other.Run({"CF.RESERVE", "taken", "1024"}), kOk);
  loader.client().making->Make();
  const uint64_t with_made = server_->budget.used();
  EXPECT_EQ(DispatchOnce(*server_, loader.client(), load, &out), CommandOutcome::kFailed);
  EXPECT_EQ(out, Err(errors::kItemExists));
  EXPECT_EQ(loader.client().making, nullptr);
  server_->lazy_freer.WaitIdle();
  EXPECT_LT(server_->budget.used(), with_made - 16'000'000) << "the made load was freed";
}

TEST_F(FilterMakerTest, AMadeFilterThatNoCommandTakesIsFreedNotKept) {
  // The second run may be refused before its handler (here: the next
  // command dispatched is another one, as after a kill or an ACL change).
  Session creator(server_.get());
  const uint64_t used = server_->budget.used();
  std::string out;
  ASSERT_EQ(DispatchOnce(*server_, creator.client(), {"CF.RESERVE", "c", "16777216"}, &out),
            CommandOutcome::kParked);
  creator.client().making->Make();
  EXPECT_GT(server_->budget.used(), used + 16'000'000);
  EXPECT_EQ(DispatchOnce(*server_, creator.client(), {"PING"}, &out), CommandOutcome::kDone);
  EXPECT_EQ(creator.client().making, nullptr);
  server_->lazy_freer.WaitIdle();
  EXPECT_EQ(server_->budget.used(), used);
  EXPECT_EQ(server_->keyspace.Find("c", NowMs()), nullptr);
  // A made filter is taken only by the command that asked for it.
  ASSERT_EQ(DispatchOnce(*server_, creator.client(), {"CF.RESERVE", "c", "16777216"}, &out),
            CommandOutcome::kParked);
  creator.client().making->Make();
  out.clear();
  EXPECT_EQ(DispatchOnce(*server_, creator.client(), {"TOPK.RESERVE", "c", kBigTopK}, &out),
            CommandOutcome::kParked)
      << "TOPK.RESERVE asks for its own";
  EXPECT_EQ(out, "");
}

TEST_F(FilterMakerTest, AFilterOverMaxmemoryIsRefusedWhenMadeAndNothingStaysCharged) {
  ServerConfig config;
  config.maxmemory = 16 << 20;  // under the 40 MB heap
  server_ = MakeServer(config);
  Session s(server_.get());
  const uint64_t used = server_->budget.used();
  EXPECT_TRUE(IsMemoryRefusal(s.Run({"TOPK.RESERVE", "k", kBigTopK}),
                              errors::kTopKInsufficientMemory, " bytes free of 16777216"));
  EXPECT_EQ(s.makes(), 1u);
  EXPECT_EQ(server_->budget.used(), used);
  EXPECT_EQ(server_->keyspace.Find("k", NowMs()), nullptr);
}

TEST_F(FilterMakerTest, ABigBloomFilterMadeOffTheLoopIsResidentBeforeItsFirstAdd) {
  // Its pages are faulted in on the maker's thread, not by the first adds
  // on the loop (a 2 MiB huge page costs up to 77 ms to fault in there).
  Session s(server_.get());
  const uint64_t before = ResidentBytes();
  if (before == 0) GTEST_SKIP() << "/proc/self/statm not readable";
  // BF.RESERVE at 0.0001 for 10 million items: ~24 MB of words.
  ASSERT_EQ(s.Run({"BF.RESERVE", "b", "0.0001", "10000000"}), kOk);
  EXPECT_EQ(s.makes(), 1u);
  EXPECT_GT(ResidentBytes(), before + 20'000'000) << "resident before any add";
  EXPECT_EQ(s.Run({"BF.ADD", "b", "x"}), Int(1));
}

// The payload of a RESP bulk string reply.
std::string BulkPayload(const std::string& reply) {
  const size_t end = reply.find("\r\n");
  return reply.substr(end + 2, std::stoull(reply.substr(1, end - 1)));
}

TEST_F(FilterMakerTest, ABigRestoreIsDecodedOffTheLoopAndAKeyCreatedMeanwhileWins) {
  Session s(server_.get());
  ASSERT_EQ(s.Run({"CF.RESERVE", "c", "16777216"}), kOk);
  ASSERT_EQ(s.Run({"CF.ADD", "c", "x"}), Int(1));
  const std::string payload = BulkPayload(s.Run({"DUMP", "c"}));
  ASSERT_GT(payload.size(), 1u << 20);
  ASSERT_EQ(s.Run({"DEL", "c"}), Int(1));
  const uint64_t makes = s.makes();
  EXPECT_EQ(s.Run({"RESTORE", "c", "0", payload}), kOk);
  EXPECT_EQ(s.makes(), makes + 1) << "decoded by the maker";
  EXPECT_EQ(s.Run({"CF.EXISTS", "c", "x"}), Int(1));
  EXPECT_EQ(s.Run({"RESTORE", "c", "0", payload}), Err(errors::kBusyKey));
  EXPECT_EQ(s.makes(), makes + 1) << "an existing key is refused before any decode";
  ASSERT_EQ(s.Run({"DEL", "c"}), Int(1));

  // A key created while the payload is decoded wins (BUSYKEY), and the
  // decoded filter is freed.
  Session other(server_.get());
  const uint64_t used = server_->budget.used();
  std::string out;
  ASSERT_EQ(DispatchOnce(*server_, s.client(), {"RESTORE", "c", "0", payload}, &out),
            CommandOutcome::kParked);
  ASSERT_EQ(other.Run({"CF.RESERVE", "c", "64"}), kOk);
  s.client().making->Make();
  EXPECT_EQ(DispatchOnce(*server_, s.client(), {"RESTORE", "c", "0", payload}, &out),
            CommandOutcome::kFailed);
  EXPECT_EQ(out, Err(errors::kBusyKey));
  server_->lazy_freer.WaitIdle();
  EXPECT_LT(server_->budget.used(), used + (1 << 20)) << "the decoded filter was freed";
  // With REPLACE it replaces that key.
  EXPECT_EQ(s.Run({"RESTORE", "c", "0", payload, "REPLACE"}), kOk);
  EXPECT_EQ(s.Run({"CF.EXISTS", "c", "x"}), Int(1));
}

// Two Bloom filters of ~24 MB (0.0001 for 10 million items) and two
// counting ones of ~5 MB, each with items of its own; one seed, so they merge.
void MakeMergeSources(Session& s) {
  for (const char* key : {"a", "b"}) {
    ASSERT_EQ(s.Run({"BF.RESERVE", key, "0.0001", "10000000", "SEED", "42"}), kOk);
    ASSERT_EQ(s.Run({"BF.ADD", key, std::string("in-") + key}), Int(1));
    const std::string counting = std::string("c") + key;
    ASSERT_EQ(s.Run({"CBF.RESERVE", counting, "0.01", "1000000", "SEED", "42"}), kOk);
    ASSERT_EQ(s.Run({"CBF.ADD", counting, "both"}), Int(1));
  }
}

TEST_F(FilterMakerTest, ABigMergeIntoANewKeyIsBuiltOffTheLoopReadingItsSourcesInPlace) {
  Session s(server_.get());
  MakeMergeSources(s);
  const uint64_t makes = s.makes();
  const uint64_t used = server_->budget.used();
  EXPECT_EQ(s.Run({"BF.MERGE", "d", "a", "b"}), kOk);
  EXPECT_EQ(s.Run({"CBF.MERGE", "cd", "ca", "cb"}), kOk);
  EXPECT_EQ(s.makes(), makes + 2) << "each merge waited for the maker";
  EXPECT_EQ(s.Run({"BF.EXISTS", "d", "in-a"}), Int(1));
  EXPECT_EQ(s.Run({"BF.EXISTS", "d", "in-b"}), Int(1));
  EXPECT_EQ(s.Run({"BF.INFO", "d", "ITEMS"}), Arr(1) + Int(2));
  EXPECT_EQ(s.Run({"CBF.COUNT", "cd", "both"}), Int(2));
  // The sources were read where they are: only the two dests were charged,
  // no snapshot copy of a source, and none is left held.
  server_->lazy_freer.WaitIdle();
  // (~24 MB + ~5 MB; copies of the four sources would add ~58 MB more)
  EXPECT_LT(server_->budget.used(), used + 40'000'000);
  for (const char* key : {"a", "b", "ca", "cb"}) {
    EXPECT_FALSE(server_->keyspace.Find(key, NowMs())->snapshot_copy_owed()) << key;
  }
  EXPECT_EQ(s.Run({"BF.ADD", "a", "later"}), Int(1));
  EXPECT_EQ(s.Run({"BF.EXISTS", "d", "later"}), Int(0));
  // Into an existing key, and small merges, stay inline.
  EXPECT_EQ(s.Run({"BF.MERGE", "d", "a"}), kOk);
  EXPECT_EQ(s.makes(), makes + 2);
}

TEST_F(FilterMakerTest, AWriteToASourceWhileAMergeReadsItWaitsAndOneAfterItMergesAgain) {
  Session creator(server_.get());
  Session writer(server_.get(), /*worker=*/1);
  MakeMergeSources(creator);
  std::string out;
  const Args merge = {"BF.MERGE", "d", "a", "b"};
  ASSERT_EQ(DispatchOnce(*server_, creator.client(), merge, &out), CommandOutcome::kParked);
  EXPECT_TRUE(server_->keyspace.Find("a", NowMs())->snapshot_copy_owed())
      << "the sources' writers must wait for the read";
  // This write parks until the maker has read the sources (it waits on the
  // snapshot copier's thread, not on a loop).
  const uint64_t requests = server_->snapshot_copier.requests();
  std::thread write([&] { EXPECT_EQ(writer.Run({"BF.ADD", "a", "between"}), Int(1)); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (server_->snapshot_copier.requests() == requests &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GT(server_->snapshot_copier.requests(), requests) << "the write did not wait";
  creator.client().making->Make();
  write.join();
  // The source changed after it was read and before the merge publishes:
  // the journal has that write first, so the merge is built again.
  EXPECT_EQ(DispatchOnce(*server_, creator.client(), merge, &out), CommandOutcome::kParked);
  EXPECT_EQ(out, "");
  creator.client().making->Make();
  ASSERT_EQ(DispatchOnce(*server_, creator.client(), merge, &out), CommandOutcome::kDone);
  EXPECT_EQ(out, kOk);
  EXPECT_EQ(writer.Run({"BF.EXISTS", "d", "between"}), Int(1));
  server_->lazy_freer.WaitIdle();
  EXPECT_FALSE(server_->keyspace.Find("a", NowMs())->snapshot_copy_owed());
}

TEST_F(FilterMakerTest, AMergeWhoseClientLeftLeavesNoSourceHeld) {
  Session creator(server_.get());
  MakeMergeSources(creator);
  const uint64_t used = server_->budget.used();
  const uint64_t parks = creator.parks();
  std::string out;
  ASSERT_EQ(DispatchOnce(*server_, creator.client(), {"CBF.MERGE", "cd", "ca", "cb"}, &out),
            CommandOutcome::kParked);
  // Gone before the maker ran its build: the build is dropped unrun.
  creator.client().making.reset();
  EXPECT_FALSE(server_->keyspace.Find("ca", NowMs())->snapshot_copy_owed());
  EXPECT_EQ(creator.Run({"CBF.ADD", "ca", "x"}), Int(1));
  EXPECT_EQ(creator.parks(), parks) << "the write did not wait";
  EXPECT_EQ(server_->budget.used(), used);
  EXPECT_EQ(server_->keyspace.Find("cd", NowMs()), nullptr);
}

TEST_F(FilterMakerTest, ABigCmsMergeIsBuiltOffTheLoopAndTakesTheDestsPlace) {
  Session s(server_.get());
  Session writer(server_.get(), /*worker=*/1);
  // 1,000,000 x 4 cells of 4 bytes: 16 MB each.
  for (const char* key : {"src", "dst"}) {
    ASSERT_EQ(s.Run({"CMS.INITBYDIM", key, "1000000", "4"}), kOk);
  }
  ASSERT_EQ(s.Run({"CMS.INCRBY", "src", "x", "3"}), Arr(1) + Int(3));
  ASSERT_EQ(s.Run({"CMS.INCRBY", "dst", "y", "1"}), Arr(1) + Int(1));
  ASSERT_EQ(s.Run({"PEXPIRE", "dst", "100000"}), Int(1));
  std::string out;
  const Args merge = {"CMS.MERGE", "dst", "2", "src", "dst", "WEIGHTS", "2", "1"};
  ASSERT_EQ(DispatchOnce(*server_, s.client(), merge, &out), CommandOutcome::kParked);
  EXPECT_TRUE(server_->keyspace.Find("src", NowMs())->snapshot_copy_owed());
  s.client().making->Make();
  // A write to a source after it was read: the merge is built again, so it
  // holds what the journal shows before it.
  EXPECT_EQ(writer.Run({"CMS.INCRBY", "src", "x", "1"}), Arr(1) + Int(4));
  ASSERT_EQ(DispatchOnce(*server_, s.client(), merge, &out), CommandOutcome::kParked);
  s.client().making->Make();
  ASSERT_EQ(DispatchOnce(*server_, s.client(), merge, &out), CommandOutcome::kDone);
  EXPECT_EQ(out, kOk);
  EXPECT_EQ(s.Run({"CMS.QUERY", "dst", "x", "y"}), Arr(2) + Int(8) + Int(1));
  EXPECT_NE(s.Run({"CMS.INFO", "dst"}).find(":9\r\n"), std::string::npos) << "count 2x4 + 1";
  const std::string ttl = s.Run({"PTTL", "dst"});
  EXPECT_TRUE(ttl.starts_with(":9") || ttl == Int(100000)) << "kept its deadline: " << ttl;
  server_->lazy_freer.WaitIdle();
  EXPECT_FALSE(server_->keyspace.Find("src", NowMs())->snapshot_copy_owed());
  EXPECT_LT(server_->budget.used(), 2 * 16'100'000u) << "the old cells were freed";
  // An overflow found off the loop refuses the merge and changes nothing.
  ASSERT_EQ(s.Run({"CMS.INCRBY", "src", "big", "4000000000"}), Arr(1) + Int(4000000000));
  EXPECT_EQ(s.Run({"CMS.MERGE", "dst", "1", "src", "WEIGHTS", "2"}), Err(errors::kCmsMergeOverflow));
  EXPECT_EQ(s.Run({"CMS.QUERY", "dst", "x"}), Arr(1) + Int(8));
}

TEST_F(FilterMakerTest, AMergeBuiltOffTheLoopReplaysToTheSameDest) {
  testutil::TempDir dir;
  const ServerConfig config = DurableConfigIn(dir, ServerConfig::AppendFsync::kAlways);
  std::string items, count;
  {
    auto server = StartOn(config, DefaultFileSystem());
    Session s(server.get());
    MakeMergeSources(s);
    EXPECT_EQ(RunDurably(*server, s, {"BF.MERGE", "d", "a", "b"}), kOk);
    EXPECT_EQ(RunDurably(*server, s, {"CBF.MERGE", "cd", "ca", "cb"}), kOk);
    EXPECT_GE(s.makes(), 2u);
    items = s.Run({"BF.INFO", "d", "ITEMS"});
    count = s.Run({"CBF.COUNT", "cd", "both"});
    EXPECT_EQ(count, Int(2));
  }
  // Replayed from the log: the dests' creation records describe them
  // empty, as created, and the merges fill them again.
  auto server = StartOn(config, DefaultFileSystem());
  Session s(server.get());
  EXPECT_EQ(s.Run({"BF.INFO", "d", "ITEMS"}), items);
  EXPECT_EQ(s.Run({"CBF.COUNT", "cd", "both"}), count);
  EXPECT_EQ(s.Run({"BF.EXISTS", "d", "in-b"}), Int(1));
}

TEST_F(FilterMakerTest, AStoppedMakerRefusesWorkAndCommandsBuildInline) {
  maker_.Stop();
  EXPECT_EQ(CurrentFilterMaker(), nullptr) << "Stop uninstalls it";
  Session s(server_.get());
  EXPECT_EQ(s.Run({"TOPK.RESERVE", "k", kBigTopK}), kOk);
  EXPECT_EQ(s.makes(), 0u);
}

}  // namespace
}  // namespace bloomgate::testing
