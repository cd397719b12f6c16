// BF.* replies and error texts, byte for byte (shared COMPAT.md §1.4, §1.5,
// §1.10, with the deliberate differences listed in server/errors.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "filters/hash_seed.h"
#include "server/commands/errors.h"
#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

constexpr const char* kU64Max = "18446744073709551615";

class BloomCommands : public ::testing::Test {
 protected:
  BloomCommands() : server_(MakeServer()), s_(server_.get()) {}

  std::string Run(const Args& args) { return s_.Run(args); }
  // BF.INFO Size and MEMORY USAGE's base: what the entry reports.
  int64_t SizeOf(std::string_view key) {
    EntryPtr entry = server_->keyspace.Find(key, NowMs());
    EXPECT_NE(entry, nullptr) << key;
    return entry == nullptr ? -1 : static_cast<int64_t>(entry->MemoryUsage());
  }
  size_t DbSize() { return server_->keyspace.Size(); }

  std::unique_ptr<ServerContext> server_;
  Session s_;
};

// BF.INFO Size of a one-layer Bloom filter, computed here rather than asked
// of the entry (SizeOf above is what the handler itself reports): its bit
// array, whole 64-byte blocks of the shape bloom_math.h picks, plus 336
// bytes of bookkeeping: the ScalableBloomFilter (160: the chain's fields,
// its first list and layer 0 inside it, the rate and hash seed; the grow
// mutex and next-shape cache are the grow stripes') and layer 0's
// BloomLayer with its BlockedBloom inside (32), three lines of one block
// with the bit array behind them, and the key's KeyEntry (64;
// its capture lock, snapshot-copy lock and owed copy live in the keyspace's
// stripes) in one allocation with its shared_ptr control block (16), and its
// map node (64). Sizes of g++ 12 / libstdc++ on x86-64.
constexpr int64_t kOneLayerBookkeepingBytes = 160 + 32 + 64 + 16 + 64;
constexpr int64_t OneLayerSize(int64_t blocks) { return blocks * 64 + kOneLayerBookkeepingBytes; }
// The first layer of the default filter: 100 items at 0.5% need 1,175
// bits, 3 blocks (bloom_math_test.cc, RoundingUpToBlocks...).
constexpr int64_t kDefaultFilterSize = OneLayerSize(3);  // 528 bytes

// Items "item0", "item1", ...
Args Items(std::string_view command, std::string_view key, size_t count, size_t first = 0) {
  Args args = {std::string(command), std::string(key)};
  for (size_t i = first; i < first + count; ++i) args.push_back("item" + std::to_string(i));
  return args;
}

std::string Join(const Args& args) {
  std::string text;
  for (const std::string& arg : args) text += (text.empty() ? "" : " ") + arg;
  return text;
}

// Splits a flat array reply of integers/booleans and at most one trailing
// error into its elements; fails the test on anything else.
struct ArrayReply {
  size_t header = 0;
  std::vector<std::string> elements;  // each with its type byte and CRLF
};

ArrayReply ParseFlatArray(const std::string& reply) {
  ArrayReply parsed;
  size_t pos = reply.find("\r\n");
  EXPECT_EQ(reply.front(), '*') << reply.substr(0, 40);
  if (pos == std::string::npos || reply.front() != '*') return parsed;
  parsed.header = std::stoul(reply.substr(1, pos - 1));
  pos += 2;
  while (pos < reply.size()) {
    size_t end = reply.find("\r\n", pos);
    EXPECT_NE(end, std::string::npos);
    if (end == std::string::npos) break;
    parsed.elements.push_back(reply.substr(pos, end + 2 - pos));
    pos = end + 2;
  }
  return parsed;
}

// ------------------------------------------------------------ BF.RESERVE ---

TEST_F(BloomCommands, ReserveCreatesAFilterOnce) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100"}), kOk);
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100"}), Err("ERR item exists"));
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.5", "7"}), Err("ERR item exists"));
  EXPECT_EQ(Run({"TYPE", "k"}), Simple("MBbloom--"));
  EXPECT_EQ(Run({"BF.INFO", "k", "CAPACITY"}), Arr(1) + Int(100));
}

TEST_F(BloomCommands, ReserveRefusesABadErrorRate) {
  for (const char* rate : {"abc", "", "0.01x", "1e", "inf", "nan", " 0.01"}) {
    EXPECT_EQ(Run({"BF.RESERVE", "k", rate, "100"}), Err("ERR bad error rate")) << rate;
  }
  for (const char* rate : {"0", "1", "1.5", "-0.1", "-0"}) {
    EXPECT_EQ(Run({"BF.RESERVE", "k", rate, "100"}),
              Err("ERR error rate must be in the range (0.000000, 1.000000)"))
        << rate;
  }
  EXPECT_EQ(DbSize(), 0u);
}

// Issue 10, bug 1: each of these spun an I/O thread at 100% forever in the
// shape search. Now a rate under the floor (filters/limits.h's
// kMinBloomErrorRate) is refused by name, and nothing is stored.
TEST_F(BloomCommands, ATinyErrorRateIsRefusedInsteadOfHangingTheThread) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "1e-62", "100"}), Err(errors::kErrorRateFloor));
  EXPECT_EQ(Run({"CBF.RESERVE", "c", "8.8e-36", "100"}), Err(errors::kErrorRateFloor));
  EXPECT_EQ(Run({"CONFIG", "SET", "bf-error-rate", "1e-62"}), kOk);
  EXPECT_EQ(Run({"BF.ADD", "new", "x"}), Err(errors::kErrorRateFloor));
  EXPECT_EQ(DbSize(), 0u);
}

TEST_F(BloomCommands, ReserveCapsALargeErrorRateInsteadOfRefusingIt) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.9", "100"}), kOk);
  EntryPtr entry = server_->keyspace.Find("k", NowMs());
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->bloom()->error_rate(), 0.25);
}

TEST_F(BloomCommands, ReserveRefusesABadCapacity) {
  for (const char* capacity : {"abc", "1e3", "10.5", "", "18446744073709551616"}) {
    EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", capacity}), Err("ERR bad capacity")) << capacity;
  }
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "0"}),
            Err("ERR capacity must be in the range [1, 18446744073709551615]"));
  // RedisBloom reads counts as signed integers, so a negative one is out of
  // range rather than "bad".
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "-1"}),
            Err("ERR capacity must be in the range [1, 18446744073709551615]"));
  EXPECT_EQ(DbSize(), 0u);
}

TEST_F(BloomCommands, ReserveChecksTheErrorRateBeforeTheCapacity) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "x", "y"}), Err("ERR bad error rate"));
}

TEST_F(BloomCommands, ReserveExpansionNeedsAValueInRange) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION"}), Err("ERR no expansion"));
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "x"}), Err("ERR bad expansion"));
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "1.5"}),
            Err("ERR bad expansion"));
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "32769"}),
            Err("ERR expansion must be in the range [0, 32768]"));
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "-1"}),
            Err("ERR expansion must be in the range [0, 32768]"));
  EXPECT_EQ(DbSize(), 0u);
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "32768"}), kOk);
  EXPECT_EQ(Run({"BF.INFO", "k", "EXPANSION"}), Arr(1) + Int(32768));
}

TEST_F(BloomCommands, ReserveExpansionZeroMeansNonScaling) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "0"}), kOk);
  EXPECT_EQ(Run({"BF.INFO", "k", "EXPANSION"}), Arr(1) + kNil);
}

TEST_F(BloomCommands, ReserveNonScalingCannotExpand) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "NONSCALING", "EXPANSION", "2"}),
            Err("Nonscaling filters cannot expand"));
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "2", "NONSCALING"}),
            Err("Nonscaling filters cannot expand"));
  EXPECT_EQ(DbSize(), 0u);
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "NONSCALING", "EXPANSION", "0"}), kOk);
  EXPECT_EQ(Run({"BF.INFO", "k", "EXPANSION"}), Arr(1) + kNil);
}

TEST_F(BloomCommands, ReserveOptionsAreExactKeywordsInAnyCase) {
  EXPECT_EQ(Run({"BF.RESERVE", "a", "0.01", "100", "nonscaling"}), kOk);
  EXPECT_EQ(Run({"BF.RESERVE", "b", "0.01", "100", "Expansion", "4"}), kOk);
  EXPECT_EQ(Run({"BF.INFO", "a", "EXPANSION"}), Arr(1) + kNil);
  EXPECT_EQ(Run({"BF.INFO", "b", "EXPANSION"}), Arr(1) + Int(4));
  // RedisBloom would match these by prefix; we refuse them.
  EXPECT_EQ(Run({"BF.RESERVE", "c", "0.01", "100", "NONSCALINGX"}), Err("ERR syntax error"));
  EXPECT_EQ(Run({"BF.RESERVE", "c", "0.01", "100", "EXP", "4"}), Err("ERR syntax error"));
  EXPECT_EQ(Run({"BF.RESERVE", "c", "0.01", "100", "FOO"}), Err("ERR syntax error"));
  EXPECT_EQ(DbSize(), 2u);
}

TEST_F(BloomCommands, ReserveKeyNamedLikeAnOptionIsJustAKey) {
  // RedisBloom searches the whole argv for NONSCALING (COMPAT §1.11).
  EXPECT_EQ(Run({"BF.RESERVE", "nonscaling", "0.01", "100"}), kOk);
  EXPECT_EQ(Run({"BF.INFO", "nonscaling", "EXPANSION"}), Arr(1) + Int(2));
}

TEST_F(BloomCommands, ReserveRefusesARepeatedOption) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "NONSCALING", "NONSCALING"}),
            Err("ERR option given more than once"));
  EXPECT_EQ(DbSize(), 0u);
}

TEST_F(BloomCommands, ReserveArityIsFourToThirteen) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01"}), WrongArity("bf.reserve"));
  // Thirteen: EXPANSION n, WINDOW s, GENERATIONS n and SEED s (NONSCALING
  // excludes WINDOW).
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "2", "WINDOW", "10",
                 "GENERATIONS", "4", "SEED", "7", "x", "y"}),
            WrongArity("bf.reserve"));
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "2", "NONSCALING", "x"}),
            Err("ERR syntax error"));
}

TEST_F(BloomCommands, ReserveOfAnImpossibleCapacityFailsCleanly) {
  uint64_t used = server_->budget.used();
  // A layer no memory could hold says so; one past the 4 GiB default cap
  // names the cap.
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", kU64Max}),
            Err("ERR Insufficient memory to create filter: needs more than 2^64 bytes, more "
                "than any filter can have"));
  EXPECT_TRUE(IsMemoryRefusal(Run({"BF.RESERVE", "k", "0.000001", "1000000000000000"}),
                              "ERR Insufficient memory to create filter",
                              " bytes, max-filter-memory is 4294967296"));
  EXPECT_EQ(server_->budget.used(), used);
  EXPECT_EQ(Run({"DBSIZE"}), Int(0));
}

// ---------------------------------------------------------------- BF.ADD ---

TEST_F(BloomCommands, AddReportsNewThenExisting) {
  EXPECT_EQ(Run({"BF.ADD", "k", "a"}), Int(1));
  EXPECT_EQ(Run({"BF.ADD", "k", "a"}), Int(0));
  EXPECT_EQ(Run({"BF.ADD", "k", ""}), Int(1));
  EXPECT_EQ(Run({"BF.CARD", "k"}), Int(2));
}

TEST_F(BloomCommands, AddInResp3ReportsBooleans) {
  s_.set_resp3(true);
  EXPECT_EQ(Run({"BF.ADD", "k", "a"}), kTrue3);
  EXPECT_EQ(Run({"BF.ADD", "k", "a"}), kFalse3);
}

TEST_F(BloomCommands, AddCreatesAFilterWithTheConfiguredDefaults) {
  EXPECT_EQ(Run({"BF.ADD", "k", "a"}), Int(1));
  EXPECT_EQ(Run({"BF.INFO", "k"}), Arr(10) + Simple("Capacity") + Int(100) + Simple("Size") +
                                       Int(kDefaultFilterSize) + Simple("Number of filters") + Int(1) +
                                       Simple("Number of items inserted") + Int(1) +
                                       Simple("Expansion rate") + Int(2));
}

TEST_F(BloomCommands, AddUsesDefaultsChangedInTheConfig) {
  ServerConfig config;
  config.bf_initial_size = 500;
  config.bf_expansion_factor = 0;
  config.bf_error_rate = 0.001;
  auto server = MakeServer(config);
  Session s(server.get());
  EXPECT_EQ(s.Run({"BF.ADD", "k", "a"}), Int(1));
  EXPECT_EQ(s.Run({"BF.INFO", "k", "CAPACITY"}), Arr(1) + Int(500));
  EXPECT_EQ(s.Run({"BF.INFO", "k", "EXPANSION"}), Arr(1) + kNil);
  EXPECT_EQ(server->keyspace.Find("k", NowMs())->bloom()->error_rate(), 0.001);

  EXPECT_EQ(s.Run({"CONFIG", "SET", "bf-initial-size", "64"}), kOk);
  EXPECT_EQ(s.Run({"BF.ADD", "k2", "a"}), Int(1));
  EXPECT_EQ(s.Run({"BF.INFO", "k2", "CAPACITY"}), Arr(1) + Int(64));
}

// --------------------------------------------------------------- BF.MADD ---

TEST_F(BloomCommands, MaddReportsEachItemInOrder) {
  EXPECT_EQ(Run({"BF.MADD", "k", "a", "b", "a"}), Arr(3) + Int(1) + Int(1) + Int(0));
  s_.set_resp3(true);
  EXPECT_EQ(Run({"BF.MADD", "k", "b", "c"}), Arr(2) + kFalse3 + kTrue3);
  EXPECT_EQ(Run({"BF.CARD", "k"}), Int(3));
}

TEST_F(BloomCommands, MaddOnAFullNonScalingFilterTruncatesAtTheFirstNewItem) {
  // COMPAT §1.4: the results so far, then one error element; later items
  // are not processed.
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "3", "NONSCALING"}), kOk);
  EXPECT_EQ(Run({"BF.MADD", "k", "a", "b", "c"}), Arr(3) + Int(1) + Int(1) + Int(1));
  EXPECT_EQ(Run({"BF.MADD", "k", "a", "b", "c", "d", "e"}),
            "*4\r\n:0\r\n:0\r\n:0\r\n-ERR non scaling filter is full\r\n");
  EXPECT_EQ(Run({"BF.MADD", "k", "d"}), "*1\r\n-ERR non scaling filter is full\r\n");
  EXPECT_EQ(Run({"BF.MEXISTS", "k", "d", "e"}), Arr(2) + Int(0) + Int(0));
  EXPECT_EQ(Run({"BF.CARD", "k"}), Int(3));
}

TEST_F(BloomCommands, MaddTruncationInResp3MixesBooleansAndTheError) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "2", "NONSCALING"}), kOk);
  s_.set_resp3(true);
  EXPECT_EQ(Run({"BF.MADD", "k", "a", "b", "a", "c", "d"}),
            "*4\r\n#t\r\n#t\r\n#f\r\n-ERR non scaling filter is full\r\n");
}

TEST_F(BloomCommands, AddOnAFullNonScalingFilterIsAnErrorOnlyForNewItems) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "1", "NONSCALING"}), kOk);
  EXPECT_EQ(Run({"BF.ADD", "k", "a"}), Int(1));
  EXPECT_EQ(Run({"BF.ADD", "k", "a"}), Int(0));
  EXPECT_EQ(Run({"BF.ADD", "k", "b"}), Err("ERR non scaling filter is full"));
}

TEST_F(BloomCommands, MaddScalesPastTheInitialCapacity) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "10", "EXPANSION", "3"}), kOk);
  ArrayReply reply = ParseFlatArray(Run(Items("BF.MADD", "k", 100)));
  EXPECT_EQ(reply.header, 100u);
  EXPECT_EQ(reply.elements.size(), 100u);
  EntryPtr entry = server_->keyspace.Find("k", NowMs());
  ASSERT_NE(entry, nullptr);
  const auto layers = entry->bloom()->Layers();
  ASSERT_EQ(layers.size(), 3u);  // 10 + 30 + 90 >= 100 items
  EXPECT_EQ(layers[1].capacity, 30u);
  EXPECT_EQ(layers[2].capacity, 90u);
  EXPECT_EQ(Run({"BF.INFO", "k", "CAPACITY"}), Arr(1) + Int(130));
  EXPECT_EQ(Run({"BF.INFO", "k", "FILTERS"}), Arr(1) + Int(3));
}

// ------------------------------------------------------------- BF.INSERT ---

TEST_F(BloomCommands, InsertCreatesWithItsOptionsAndAddsTheItems) {
  EXPECT_EQ(Run({"BF.INSERT", "k", "CAPACITY", "1000", "ERROR", "0.001", "EXPANSION", "4",
                 "ITEMS", "a", "b", "a"}),
            Arr(3) + Int(1) + Int(1) + Int(0));
  EXPECT_EQ(Run({"BF.INFO", "k", "CAPACITY"}), Arr(1) + Int(1000));
  EXPECT_EQ(Run({"BF.INFO", "k", "EXPANSION"}), Arr(1) + Int(4));
  EXPECT_EQ(server_->keyspace.Find("k", NowMs())->bloom()->error_rate(), 0.001);
}

TEST_F(BloomCommands, InsertIgnoresItsOptionsWhenTheKeyExists) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100"}), kOk);
  EXPECT_EQ(Run({"BF.INSERT", "k", "CAPACITY", "5000", "NONSCALING", "ITEMS", "a"}),
            Arr(1) + Int(1));
  EXPECT_EQ(Run({"BF.INFO", "k", "CAPACITY"}), Arr(1) + Int(100));
  EXPECT_EQ(Run({"BF.INFO", "k", "EXPANSION"}), Arr(1) + Int(2));
}

TEST_F(BloomCommands, InsertNonScalingMeansNonScalingAndExpansionZeroIsRefused) {
  EXPECT_EQ(Run({"BF.INSERT", "a", "NONSCALING", "ITEMS", "x"}), Arr(1) + Int(1));
  EXPECT_EQ(Run({"BF.INFO", "a", "EXPANSION"}), Arr(1) + kNil);
  // RedisBloom refuses BF.INSERT's EXPANSION 0 (BF.RESERVE takes it as NONSCALING).
  EXPECT_EQ(Run({"BF.INSERT", "b", "EXPANSION", "0", "ITEMS", "x"}), Err("Bad expansion"));
  EXPECT_EQ(Run({"BF.INSERT", "b", "NONSCALING", "EXPANSION", "0", "ITEMS", "x"}),
            Err("Bad expansion"));
  EXPECT_EQ(Run({"EXISTS", "b"}), Int(0));
  EXPECT_EQ(Run({"BF.INSERT", "b", "EXPANSION", "1", "ITEMS", "x"}), Arr(1) + Int(1));
}

TEST_F(BloomCommands, InsertErrorsCarryNoErrCodeAsInRedisBloom) {
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"BF.INSERT", "k", "CAPACITY", "0", "ITEMS", "a"}, "Bad capacity"},
      {{"BF.INSERT", "k", "CAPACITY", "x", "ITEMS", "a"}, "Bad capacity"},
      {{"BF.INSERT", "k", "CAPACITY", "ITEMS", "a"}, "Bad capacity"},
      {{"BF.INSERT", "k", "ERROR", "x", "ITEMS", "a"}, "Bad error rate"},
      {{"BF.INSERT", "k", "ERROR", "0", "ITEMS", "a"}, "Bad error rate"},
      {{"BF.INSERT", "k", "ERROR", "1", "ITEMS", "a"}, "Bad error rate"},
      {{"BF.INSERT", "k", "EXPANSION", "x", "ITEMS", "a"}, "Bad expansion"},
      {{"BF.INSERT", "k", "EXPANSION", "32769", "ITEMS", "a"}, "Bad expansion"},
      {{"BF.INSERT", "k", "FOO", "ITEMS", "a"}, "Unknown argument received"},
      {{"BF.INSERT", "k", "CAP", "10", "ITEMS", "a"}, "Unknown argument received"},
      {{"BF.INSERT", "k", "ITEM", "a", "b"}, "Unknown argument received"},
  };
  for (const auto& [args, text] : cases) {
    EXPECT_EQ(Run(args), Err(text)) << Join(args);
  }
  EXPECT_EQ(DbSize(), 0u);
}

TEST_F(BloomCommands, InsertRefusesConflictingOrRepeatedOptions) {
  EXPECT_EQ(Run({"BF.INSERT", "k", "NONSCALING", "EXPANSION", "2", "ITEMS", "a"}),
            Err("Nonscaling filters cannot expand"));
  EXPECT_EQ(Run({"BF.INSERT", "k", "NOCREATE", "CAPACITY", "10", "ITEMS", "a"}),
            Err("ERR NOCREATE cannot be combined with CAPACITY or ERROR"));
  EXPECT_EQ(Run({"BF.INSERT", "k", "ERROR", "0.1", "NOCREATE", "ITEMS", "a"}),
            Err("ERR NOCREATE cannot be combined with CAPACITY or ERROR"));
  EXPECT_EQ(Run({"BF.INSERT", "k", "CAPACITY", "10", "CAPACITY", "20", "ITEMS", "a"}),
            Err("ERR option given more than once"));
  EXPECT_EQ(DbSize(), 0u);
}

TEST_F(BloomCommands, InsertNeedsItemsAfterTheItemsKeyword) {
  EXPECT_EQ(Run({"BF.INSERT", "k", "ITEMS"}), WrongArity("bf.insert"));
  EXPECT_EQ(Run({"BF.INSERT", "k", "CAPACITY", "10", "ITEMS"}), WrongArity("bf.insert"));
  EXPECT_EQ(Run({"BF.INSERT", "k", "NONSCALING", "NOCREATE"}), WrongArity("bf.insert"));
  EXPECT_EQ(DbSize(), 0u);
}

TEST_F(BloomCommands, InsertTakesEverythingAfterItemsAsItems) {
  EXPECT_EQ(Run({"BF.INSERT", "k", "ITEMS", "CAPACITY", "NOCREATE", "ITEMS"}),
            Arr(3) + Int(1) + Int(1) + Int(1));
  EXPECT_EQ(Run({"BF.EXISTS", "k", "NOCREATE"}), Int(1));
}

TEST_F(BloomCommands, InsertNoCreateOnAMissingKeyIsNotFound) {
  EXPECT_EQ(Run({"BF.INSERT", "k", "NOCREATE", "ITEMS", "a"}), Err("ERR not found"));
  EXPECT_EQ(DbSize(), 0u);
  EXPECT_EQ(Run({"BF.ADD", "k", "a"}), Int(1));
  EXPECT_EQ(Run({"BF.INSERT", "k", "NOCREATE", "ITEMS", "a", "b"}), Arr(2) + Int(0) + Int(1));
}

TEST_F(BloomCommands, InsertOnAFullNonScalingFilterTruncatesLikeMadd) {
  EXPECT_EQ(Run({"BF.INSERT", "k", "CAPACITY", "2", "NONSCALING", "ITEMS", "a", "b", "c", "d"}),
            "*3\r\n:1\r\n:1\r\n-ERR non scaling filter is full\r\n");
  EXPECT_EQ(Run({"BF.CARD", "k"}), Int(2));
}

TEST_F(BloomCommands, InsertOfAnImpossibleCapacityFailsCleanly) {
  uint64_t used = server_->budget.used();
  EXPECT_EQ(Run({"BF.INSERT", "k", "CAPACITY", kU64Max, "ITEMS", "a"}),
            Err("ERR Insufficient memory to create filter: needs more than 2^64 bytes, more "
                "than any filter can have"));
  EXPECT_EQ(server_->budget.used(), used);
  EXPECT_EQ(DbSize(), 0u);
}

// ------------------------------------ valkey-bloom's BF.INSERT options ---

// Its texts (src/bloom/utils.rs), each refusal creating nothing.
TEST_F(BloomCommands, InsertValkeyOptionsRefuseBadValuesWithValkeyBloomsTexts) {
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"BF.INSERT", "k", "TIGHTENING", "x", "ITEMS", "a"}, "ERR bad tightening ratio"},
      {{"BF.INSERT", "k", "TIGHTENING", "0", "ITEMS", "a"}, "ERR (0 < tightening ratio range < 1)"},
      {{"BF.INSERT", "k", "TIGHTENING", "1", "ITEMS", "a"}, "ERR (0 < tightening ratio range < 1)"},
      {{"BF.INSERT", "k", "TIGHTENING", "-0.5", "ITEMS", "a"},
       "ERR (0 < tightening ratio range < 1)"},
      {{"BF.INSERT", "k", "VALIDATESCALETO", "0", "ITEMS", "a"},
       "ERR (capacity should be larger than 0)"},
      {{"BF.INSERT", "k", "VALIDATESCALETO", "-1", "ITEMS", "a"}, "ERR bad capacity"},
      {{"BF.INSERT", "k", "VALIDATESCALETO", "x", "ITEMS", "a"}, "ERR bad capacity"},
      {{"BF.INSERT", "k", "VALIDATESCALETO", "9223372036854775808", "ITEMS", "a"},
       "ERR bad capacity"},
      {{"BF.INSERT", "k", "NONSCALING", "VALIDATESCALETO", "100", "ITEMS", "a"},
       "ERR cannot use NONSCALING and VALIDATESCALETO options together"},
      {{"BF.INSERT", "k", "VALIDATESCALETO", "100", "NONSCALING", "ITEMS", "a"},
       "ERR cannot use NONSCALING and VALIDATESCALETO options together"},
      {{"BF.INSERT", "k", "SEED", "short", "ITEMS", "a"}, "ERR invalid seed"},
      {{"BF.INSERT", "k", "SEED", std::string(33, 'x'), "ITEMS", "a"}, "ERR invalid seed"},
      {{"BF.INSERT", "k", "SEED", "0", "ITEMS", "a"}, "ERR invalid seed"},
      {{"BF.INSERT", "k", "NOCREATE", "TIGHTENING", "0.5", "ITEMS", "a"},
       "ERR NOCREATE cannot be combined with TIGHTENING"},
      {{"BF.INSERT", "k", "WINDOW", "60", "TIGHTENING", "0.5", "ITEMS", "a"},
       "ERR WINDOW cannot be combined with TIGHTENING or VALIDATESCALETO"},
      {{"BF.INSERT", "k", "TIGHTENING", "0.5", "TIGHTENING", "0.5", "ITEMS", "a"},
       "ERR option given more than once"},
      {{"CBF.INSERT", "k", "TIGHTENING", "0.5", "ITEMS", "a"}, "Unknown argument received"},
  };
  for (const auto& [args, text] : cases) {
    EXPECT_EQ(Run(args), Err(text)) << Join(args);
  }
  EXPECT_EQ(Run({"BF.INSERT", "k", "TIGHTENING"}), WrongArity("bf.insert"));
  EXPECT_EQ(Run({"BF.INSERT", "k", "VALIDATESCALETO"}), WrongArity("bf.insert"));
  EXPECT_EQ(DbSize(), 0u);
}

TEST_F(BloomCommands, InsertTighteningSetsEveryLayersRatio) {
  EXPECT_EQ(Run({"BF.INSERT", "k", "CAPACITY", "10", "TIGHTENING", "0.25", "ITEMS", "a"}),
            Arr(1) + Int(1));
  Run(Items("BF.MADD", "k", 100));
  const ScalableBloomFilter& filter = *server_->keyspace.Find("k", NowMs())->bloom();
  EXPECT_EQ(filter.tightening(), 0.25);
  const auto layers = filter.Layers();
  ASSERT_GE(layers.size(), 3u);
  EXPECT_EQ(layers[0].error_rate, 0.01 * 0.25);
  for (size_t i = 1; i < layers.size(); ++i) {
    EXPECT_EQ(layers[i].error_rate, layers[i - 1].error_rate * 0.25) << i;
  }
  EXPECT_EQ(Run({"BF.INFO", "k", "TIGHTENING"}), Arr(1) + Bulk("0.25"));
}

// 32 raw bytes are valkey-bloom's seed: one seed, one hashing, so two filters
// made with it answer every probe alike (false positives included).
TEST_F(BloomCommands, InsertWithValkeysThirtyTwoByteSeedHashesAlikeEveryTime) {
  const std::string seed = "0123456789abcdef0123456789ABCDEF";
  for (const char* key : {"a", "b"}) {
    EXPECT_EQ(Run({"BF.INSERT", key, "ERROR", "0.2", "SEED", seed, "ITEMS", "x"}),
              Arr(1) + Int(1));
  }
  const ScalableBloomFilter& a = *server_->keyspace.Find("a", NowMs())->bloom();
  const ScalableBloomFilter& b = *server_->keyspace.Find("b", NowMs())->bloom();
  EXPECT_EQ(a.hash_seed(), b.hash_seed());
  EXPECT_EQ(a.hash_seed(), SeedFromBytes(seed));
  EXPECT_EQ(Run({"BF.INSERT", "c", "ERROR", "0.2", "SEED", "0123456789abcdef0123456789ABCDEX",
                 "ITEMS", "x"}),
            Arr(1) + Int(1));
  EXPECT_NE(server_->keyspace.Find("c", NowMs())->bloom()->hash_seed(), a.hash_seed());
  EXPECT_EQ(Run({"BF.MERGE", "a", "b"}), kOk);  // same seed: they merge
}

TEST_F(BloomCommands, InsertValidateScaleToChecksTheCommandsParametersAgainstTheCap) {
  // Layers sized for 1e-102, 1e-202, 1e-302: a fourth would need 1e-402.
  EXPECT_EQ(Run({"BF.INSERT", "j", "CAPACITY", "1", "EXPANSION", "1", "TIGHTENING", "1e-100",
                 "VALIDATESCALETO", "1000", "ITEMS", "a"}),
            Err("ERR provided VALIDATESCALETO causes false positive to degrade to 0"));
  ASSERT_EQ(Run({"CONFIG", "SET", "max-filter-memory", "65536"}), kOk);
  EXPECT_EQ(Run({"BF.INSERT", "k", "CAPACITY", "100", "VALIDATESCALETO", "10000", "ITEMS", "a"}),
            Arr(1) + Int(1));
  EXPECT_EQ(Run({"BF.INSERT", "j", "CAPACITY", "100", "VALIDATESCALETO", "100000000", "ITEMS",
                 "a"}),
            Err("ERR provided VALIDATESCALETO causes bloom object to exceed memory limit"));
  // As valkey-bloom: the command's own parameters are judged, whatever the key holds.
  EXPECT_EQ(Run({"BF.INSERT", "k", "VALIDATESCALETO", "100000000", "ITEMS", "b"}),
            Err("ERR provided VALIDATESCALETO causes bloom object to exceed memory limit"));
  EXPECT_EQ(Run({"BF.INSERT", "j", "CAPACITY", "1", "EXPANSION", "1", "VALIDATESCALETO", "1000",
                 "ITEMS", "a"}),
            Err("ERR provided VALIDATESCALETO needs more than 64 filters, the most a bloom "
                "object may have"));
  EXPECT_EQ(Run({"EXISTS", "j"}), Int(0));
  EXPECT_EQ(Run({"BF.EXISTS", "k", "b"}), Int(0));
}

TEST_F(BloomCommands, InfoAnswersValkeyBloomsFieldsByNameOnly) {
  ASSERT_EQ(Run({"CONFIG", "SET", "max-filter-memory", "65536"}), kOk);
  EXPECT_EQ(Run({"BF.INSERT", "k", "ERROR", "0.05", "ITEMS", "a"}), Arr(1) + Int(1));
  EXPECT_EQ(Run({"BF.INFO", "k", "ERROR"}), Arr(1) + Bulk("0.05"));
  EXPECT_EQ(Run({"BF.INFO", "k", "tightening"}), Arr(1) + Bulk("0.5"));
  const uint64_t max = server_->keyspace.Find("k", NowMs())->bloom()->MaxScaledCapacity();
  EXPECT_GT(max, 100u);
  EXPECT_EQ(Run({"BF.INFO", "k", "MAXSCALEDCAPACITY"}), Arr(1) + Int(static_cast<int64_t>(max)));
  // The full reply stays RedisBloom's five fields.
  EXPECT_TRUE(Run({"BF.INFO", "k"}).starts_with(Arr(10)));
  s_.set_resp3(true);
  EXPECT_EQ(Run({"BF.INFO", "k", "ERROR"}), Map(1) + Simple("Error rate") + ",0.05\r\n");
  s_.set_resp3(false);
  // A non-scaling filter has neither a ratio nor a scaled capacity (valkey-bloom).
  EXPECT_EQ(Run({"BF.RESERVE", "n", "0.01", "100", "NONSCALING"}), kOk);
  EXPECT_EQ(Run({"BF.INFO", "n", "ERROR"}), Arr(1) + Bulk("0.01"));
  EXPECT_EQ(Run({"BF.INFO", "n", "TIGHTENING"}), Err("Invalid information value"));
  EXPECT_EQ(Run({"BF.INFO", "n", "MAXSCALEDCAPACITY"}), Err("Invalid information value"));
}

TEST_F(BloomCommands, AGrowthThatWouldUnderflowTheRateIsValkeyBloomsError) {
  EXPECT_EQ(Run({"BF.INSERT", "k", "CAPACITY", "1", "EXPANSION", "1", "TIGHTENING", "1e-100",
                 "ITEMS", "a"}),
            Arr(1) + Int(1));
  EXPECT_EQ(Run(Items("BF.MADD", "k", 5, /*first=*/1)),
            Arr(3) + Int(1) + Int(1) + Err("ERR false positive degrades to 0 on scale out"));
  EXPECT_EQ(Run({"BF.INFO", "k", "FILTERS"}), Arr(1) + Int(3));
}

// ---------------------------------------------------- BF.EXISTS / MEXISTS ---

TEST_F(BloomCommands, ExistsOnAMissingKeyIsZero) {
  EXPECT_EQ(Run({"BF.EXISTS", "k", "a"}), Int(0));
  EXPECT_EQ(Run({"BF.MEXISTS", "k", "a", "b"}), Arr(2) + Int(0) + Int(0));
  EXPECT_EQ(DbSize(), 0u);
}

TEST_F(BloomCommands, ExistsFindsAddedItems) {
  EXPECT_EQ(Run({"BF.MADD", "k", "a", "c"}), Arr(2) + Int(1) + Int(1));
  EXPECT_EQ(Run({"BF.EXISTS", "k", "a"}), Int(1));
  EXPECT_EQ(Run({"BF.EXISTS", "k", "b"}), Int(0));
  EXPECT_EQ(Run({"BF.MEXISTS", "k", "a", "b", "c"}), Arr(3) + Int(1) + Int(0) + Int(1));
  s_.set_resp3(true);
  EXPECT_EQ(Run({"BF.EXISTS", "k", "a"}), kTrue3);
  EXPECT_EQ(Run({"BF.EXISTS", "missing", "a"}), kFalse3);
  EXPECT_EQ(Run({"BF.MEXISTS", "k", "a", "b"}), Arr(2) + kTrue3 + kFalse3);
}

TEST_F(BloomCommands, NoAddedItemIsEverReportedMissing) {
  Run(Items("BF.MADD", "k", 2000));
  ArrayReply reply = ParseFlatArray(Run(Items("BF.MEXISTS", "k", 2000)));
  ASSERT_EQ(reply.elements.size(), 2000u);
  for (size_t i = 0; i < reply.elements.size(); ++i) {
    ASSERT_EQ(reply.elements[i], Int(1)) << "item" << i;
  }
}

// The multi-item commands work in chunks of kBloomBatchItems (128) items
// (hash all, prefetch all, probe): across chunk boundaries every answer must
// be the one the single-item command gives for that item.
TEST_F(BloomCommands, MultiItemAnswersAcrossChunksMatchOneItemAtATime) {
  Run({"BF.RESERVE", "k", "0.01", "1000"});
  Run({"CF.RESERVE", "c", "1000"});
  Run(Items("BF.MADD", "k", 300));
  for (int i = 0; i < 300; ++i) Run({"CF.ADD", "c", "item" + std::to_string(i)});
  for (const char* family : {"BF", "CF"}) {
    const std::string prefix = family;
    const std::string key = prefix == "BF" ? "k" : "c";
    // Items 150..449: present ones, then absent ones, over three chunks.
    ArrayReply reply = ParseFlatArray(Run(Items(prefix + ".MEXISTS", key, 300, 150)));
    ASSERT_EQ(reply.elements.size(), 300u);
    int absent = 0;
    for (int i = 0; i < 300; ++i) {
      const std::string item = "item" + std::to_string(150 + i);
      ASSERT_EQ(reply.elements[i], Run({prefix + ".EXISTS", key, item})) << family << " " << item;
      absent += reply.elements[i] == Int(0);
    }
    EXPECT_GE(absent, 140) << family << ": items 300..449 were never added";
  }
}

TEST_F(BloomCommands, MultiItemAddsStopInALaterChunkAsOneItemAtATime) {
  // Non-scaling, capacity 200: the add that finds the filter full comes in
  // the second chunk of 128. The reply and what went in must be those of
  // adding the items one by one (into a twin filter with the same seed).
  for (const char* family : {"BF", "CBF"}) {
    const std::string prefix = family;
    for (const char* key : {"batch", "one"}) {
      ASSERT_EQ(Run({prefix + ".RESERVE", key, "0.01", "200", "NONSCALING", "SEED", "42"}), kOk);
    }
    ArrayReply batch = ParseFlatArray(Run(Items(prefix + ".MADD", "batch", 300)));
    std::vector<std::string> one;
    for (int i = 0; i < 300; ++i) {
      one.push_back(Run({prefix + ".MADD", "one", "item" + std::to_string(i)}));
      if (one.back().find("full") != std::string::npos) break;
    }
    ASSERT_EQ(batch.elements.size(), one.size()) << family;
    ASSERT_GT(one.size(), 128u) << family << ": the stop must fall past the first chunk";
    for (size_t i = 0; i + 1 < one.size(); ++i) {
      EXPECT_EQ(Arr(1) + batch.elements[i], one[i]) << family << " item" << i;
    }
    EXPECT_NE(batch.elements.back().find("full"), std::string::npos) << batch.elements.back();
    EXPECT_EQ(Run({prefix + ".CARD", "batch"}), Run({prefix + ".CARD", "one"})) << family;
    Run({"DEL", "batch", "one"});
  }
}

// -------------------------------------------------------------- BF.CARD ---

TEST_F(BloomCommands, CardCountsItemsThatFlippedABit) {
  EXPECT_EQ(Run({"BF.CARD", "k"}), Int(0));
  EXPECT_EQ(DbSize(), 0u);
  Run({"BF.MADD", "k", "a", "b", "a"});
  EXPECT_EQ(Run({"BF.CARD", "k"}), Int(2));
  s_.set_resp3(true);
  EXPECT_EQ(Run({"BF.CARD", "k"}), Int(2));
}

// -------------------------------------------------------------- BF.INFO ---

TEST_F(BloomCommands, InfoOnAMissingKeyIsNotFound) {
  EXPECT_EQ(Run({"BF.INFO", "k"}), Err("ERR not found"));
  EXPECT_EQ(Run({"BF.INFO", "k", "CAPACITY"}), Err("ERR not found"));
  // The key is looked up before the selector, as in RedisBloom.
  EXPECT_EQ(Run({"BF.INFO", "k", "NOPE"}), Err("ERR not found"));
}

TEST_F(BloomCommands, InfoInResp2IsAFlatArrayOfTenInRedisBloomsOrder) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "1000", "EXPANSION", "4"}), kOk);
  Run({"BF.MADD", "k", "a", "b", "c"});
  // 1,000 items at 0.5%: 11.75 bits each, 11,750 bits in 23 blocks.
  EXPECT_EQ(Run({"BF.INFO", "k"}),
            "*10\r\n+Capacity\r\n:1000\r\n+Size\r\n" + Int(OneLayerSize(23)) +
                "+Number of filters\r\n:1\r\n+Number of items inserted\r\n:3\r\n"
                "+Expansion rate\r\n:4\r\n");
}

TEST_F(BloomCommands, InfoInResp3IsAMapOfFive) {
  EXPECT_EQ(Run({"BF.ADD", "k", "a"}), Int(1));
  s_.set_resp3(true);
  EXPECT_EQ(Run({"BF.INFO", "k"}),
            "%5\r\n+Capacity\r\n:100\r\n+Size\r\n" + Int(kDefaultFilterSize) +
                "+Number of filters\r\n:1\r\n+Number of items inserted\r\n:1\r\n"
                "+Expansion rate\r\n:2\r\n");
}

TEST_F(BloomCommands, InfoExpansionOfANonScalingFilterIsNil) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "NONSCALING"}), kOk);
  EXPECT_EQ(Run({"BF.INFO", "k"}),
            "*10\r\n+Capacity\r\n:100\r\n+Size\r\n" + Int(SizeOf("k")) +
                "+Number of filters\r\n:1\r\n+Number of items inserted\r\n:0\r\n"
                "+Expansion rate\r\n$-1\r\n");
  s_.set_resp3(true);
  EXPECT_EQ(Run({"BF.INFO", "k"}),
            "%5\r\n+Capacity\r\n:100\r\n+Size\r\n" + Int(SizeOf("k")) +
                "+Number of filters\r\n:1\r\n+Number of items inserted\r\n:0\r\n"
                "+Expansion rate\r\n_\r\n");
  EXPECT_EQ(Run({"BF.INFO", "k", "EXPANSION"}), Map(1) + Simple("Expansion rate") + kNull3);
}

TEST_F(BloomCommands, InfoSelectorIsASingletonArrayInResp2AndAOneEntryMapInResp3) {
  Run({"BF.MADD", "k", "a", "b"});
  const int64_t size = SizeOf("k");
  EXPECT_EQ(Run({"BF.INFO", "k", "CAPACITY"}), Arr(1) + Int(100));
  EXPECT_EQ(Run({"BF.INFO", "k", "SIZE"}), Arr(1) + Int(size));
  EXPECT_EQ(Run({"BF.INFO", "k", "FILTERS"}), Arr(1) + Int(1));
  EXPECT_EQ(Run({"BF.INFO", "k", "ITEMS"}), Arr(1) + Int(2));
  EXPECT_EQ(Run({"BF.INFO", "k", "EXPANSION"}), Arr(1) + Int(2));
  s_.set_resp3(true);
  EXPECT_EQ(Run({"BF.INFO", "k", "CAPACITY"}), Map(1) + Simple("Capacity") + Int(100));
  EXPECT_EQ(Run({"BF.INFO", "k", "SIZE"}), Map(1) + Simple("Size") + Int(size));
  EXPECT_EQ(Run({"BF.INFO", "k", "FILTERS"}), Map(1) + Simple("Number of filters") + Int(1));
  EXPECT_EQ(Run({"BF.INFO", "k", "ITEMS"}),
            Map(1) + Simple("Number of items inserted") + Int(2));
  EXPECT_EQ(Run({"BF.INFO", "k", "EXPANSION"}), Map(1) + Simple("Expansion rate") + Int(2));
}

TEST_F(BloomCommands, InfoSelectorsIgnoreCaseAndRefuseOtherWords) {
  Run({"BF.ADD", "k", "a"});
  EXPECT_EQ(Run({"BF.INFO", "k", "capacity"}), Arr(1) + Int(100));
  EXPECT_EQ(Run({"BF.INFO", "k", "Items"}), Arr(1) + Int(1));
  EXPECT_EQ(Run({"BF.INFO", "k", "CAP"}), Err("Invalid information value"));
  EXPECT_EQ(Run({"BF.INFO", "k", "Capacity "}), Err("Invalid information value"));
}

TEST_F(BloomCommands, InfoSizeGrowsWithTheLayers) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "10"}), kOk);
  const int64_t before = SizeOf("k");
  Run(Items("BF.MADD", "k", 40));
  EXPECT_GT(SizeOf("k"), before);
  EXPECT_EQ(Run({"BF.INFO", "k", "SIZE"}), Arr(1) + Int(SizeOf("k")));
}

// ------------------------------------------------------------ WRONGTYPE ---

TEST_F(BloomCommands, EveryCommandAnswersWrongTypeOnAnotherTypeOfKey) {
  InsertCuckooKey(server_.get(), "other");
  EXPECT_EQ(Run({"TYPE", "other"}), Simple("MBbloomCF"));
  const std::string wrongtype = Err(errors::kWrongType);
  EXPECT_EQ(Run({"BF.RESERVE", "other", "0.01", "100"}), wrongtype);
  EXPECT_EQ(Run({"BF.ADD", "other", "a"}), wrongtype);
  EXPECT_EQ(Run({"BF.MADD", "other", "a", "b"}), wrongtype);
  EXPECT_EQ(Run({"BF.INSERT", "other", "ITEMS", "a"}), wrongtype);
  EXPECT_EQ(Run({"BF.INSERT", "other", "NOCREATE", "ITEMS", "a"}), wrongtype);
  EXPECT_EQ(Run({"BF.EXISTS", "other", "a"}), wrongtype);
  EXPECT_EQ(Run({"BF.MEXISTS", "other", "a", "b"}), wrongtype);
  EXPECT_EQ(Run({"BF.CARD", "other"}), wrongtype);
  EXPECT_EQ(Run({"BF.INFO", "other"}), wrongtype);
  EXPECT_EQ(Run({"BF.INFO", "other", "CAPACITY"}), wrongtype);
  EXPECT_EQ(DbSize(), 1u);
}

// ------------------------------------------------------- memory limits ---

TEST(BloomMemoryLimits, MaxmemoryRefusesAFilterThatDoesNotFit) {
  ServerConfig config;
  config.maxmemory = 64 * 1024;
  auto server = MakeServer(config);
  Session s(server.get());
  EXPECT_TRUE(IsMemoryRefusal(s.Run({"BF.RESERVE", "big", "0.01", "1000000"}),
                              "ERR Insufficient memory to create filter",
                              " bytes free of 65536"));
  EXPECT_TRUE(IsMemoryRefusal(s.Run({"BF.INSERT", "big", "CAPACITY", "1000000", "ITEMS", "a"}),
                              "ERR Insufficient memory to create filter",
                              " bytes free of 65536"));
  EXPECT_EQ(server->budget.used(), 0u);
  EXPECT_EQ(s.Run({"DBSIZE"}), Int(0));
  // A small one still fits.
  EXPECT_EQ(s.Run({"BF.ADD", "small", "a"}), Int(1));
  EXPECT_EQ(s.Run({"DBSIZE"}), Int(1));
  EXPECT_GT(server->budget.used(), 0u);
}

TEST(BloomMemoryLimits, MaxFilterMemoryRefusesAFilterLargerThanTheCap) {
  ServerConfig config;
  config.max_filter_memory = 64 * 1024;
  auto server = MakeServer(config);
  Session s(server.get());
  EXPECT_TRUE(IsMemoryRefusal(s.Run({"BF.RESERVE", "big", "0.01", "1000000"}),
                              "ERR Insufficient memory to create filter",
                              " bytes, max-filter-memory is 65536"));
  EXPECT_EQ(server->budget.used(), 0u);
  EXPECT_EQ(s.Run({"BF.RESERVE", "small", "0.01", "1000"}), kOk);
  EXPECT_EQ(s.Run({"DBSIZE"}), Int(1));
}

TEST(BloomMemoryLimits, DeletingAFilterGivesItsMemoryBack) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"BF.RESERVE", "k", "0.01", "10000"}), kOk);
  EXPECT_GT(server->budget.used(), 10000u);
  EXPECT_EQ(s.Run({"DEL", "k"}), Int(1));
  EXPECT_EQ(server->budget.used(), 0u);
}

// The bytes a filter created by `reserve` occupies, measured on its own server.
uint64_t FilterBytes(const Args& reserve) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run(reserve), kOk);
  return server->budget.used();
}

TEST(BloomMemoryLimits, GrowthBlockedByMaxFilterMemoryTruncatesMadd) {
  const Args reserve = {"BF.RESERVE", "k", "0.01", "100"};
  ServerConfig config;
  config.max_filter_memory = FilterBytes(reserve) + 64;  // room for no second layer
  auto server = MakeServer(config);
  Session s(server.get());
  ASSERT_EQ(s.Run(reserve), kOk);
  const uint64_t used = server->budget.used();

  ArrayReply reply = ParseFlatArray(s.Run(Items("BF.MADD", "k", 300)));
  ASSERT_FALSE(reply.elements.empty());
  EXPECT_EQ(reply.header, reply.elements.size());
  // RedisBloom's text, then the limit: layer 1 would take the filter to 904
  // bytes (BF.INFO Size after growth), past the cap.
  const std::string refused = "ERR problem inserting into filter: growing needs 904 bytes in all, "
                              "max-filter-memory is " + std::to_string(config.max_filter_memory);
  EXPECT_EQ(reply.elements.back(), Err(refused));
  EXPECT_GE(reply.elements.size(), 101u);  // at least the first 100 items, then the error
  EXPECT_LT(reply.elements.size(), 300u);
  EXPECT_EQ(s.Run({"BF.CARD", "k"}), Int(100));
  EXPECT_EQ(s.Run({"BF.INFO", "k", "FILTERS"}), Arr(1) + Int(1));
  EXPECT_EQ(server->budget.used(), used);
  EXPECT_EQ(s.Run({"BF.ADD", "k", "one more"}), Err(refused));
}

TEST(BloomMemoryLimits, GrowthBlockedByMaxmemoryTruncatesMaddWithOom) {
  const Args reserve = {"BF.RESERVE", "k", "0.01", "100"};
  ServerConfig config;
  config.maxmemory = FilterBytes(reserve) + 64;
  auto server = MakeServer(config);
  Session s(server.get());
  ASSERT_EQ(s.Run(reserve), kOk);
  const uint64_t used = server->budget.used();

  ArrayReply reply = ParseFlatArray(s.Run(Items("BF.MADD", "k", 300)));
  ASSERT_FALSE(reply.elements.empty());
  EXPECT_EQ(reply.header, reply.elements.size());
  // Redis's OOM text, then what the layer needs and what maxmemory has left.
  EXPECT_EQ(reply.elements.back(),
            Err(std::string(errors::kOom) + ": growing needs 520 more bytes, maxmemory has 64 " +
                "bytes free of " + std::to_string(config.maxmemory)));
  EXPECT_EQ(s.Run({"BF.CARD", "k"}), Int(100));
  EXPECT_EQ(server->budget.used(), used);
}

// ---------------------------------------------- nothing made on errors ---

TEST(BloomErrors, NoFailedCommandCreatesAKeyOrKeepsMemory) {
  const std::vector<Args> failing = {
      {"BF.RESERVE", "k", "x", "100"},
      {"BF.RESERVE", "k", "0.01", "0"},
      {"BF.RESERVE", "k", "0.01", "100", "EXPANSION"},
      {"BF.RESERVE", "k", "0.01", "100", "BOGUS"},
      {"BF.RESERVE", "k", "0.01", kU64Max},
      {"BF.ADD", "k"},
      {"BF.MADD", "k"},
      {"BF.INSERT", "k", "CAPACITY", "0", "ITEMS", "a"},
      {"BF.INSERT", "k", "NOCREATE", "ITEMS", "a"},
      {"BF.INSERT", "k", "CAPACITY", kU64Max, "ITEMS", "a"},
      {"BF.INSERT", "k", "CAPACITY", "10"},
      {"BF.INFO", "k"},
      {"BF.INFO", "k", "CAPACITY"},
      {"BF.INFO", "k", "NOPE"},
      {"BF.EXISTS", "k", "a"},
      {"BF.MEXISTS", "k", "a"},
      {"BF.CARD", "k"},
  };
  auto server = MakeServer();
  Session s(server.get());
  for (const Args& args : failing) {
    s.Run(args);
    EXPECT_EQ(s.Run({"DBSIZE"}), Int(0)) << Join(args);
    EXPECT_EQ(server->budget.used(), 0u) << Join(args);
  }
}

TEST(BloomErrors, EveryRefusalWritesExactlyOneErrorReply) {
  auto server = MakeServer();
  Session s(server.get());
  for (const Args& args : std::vector<Args>{{"BF.RESERVE", "k", "x", "100"},
                                            {"BF.INSERT", "k", "FOO", "ITEMS", "a"},
                                            {"BF.INFO", "k"}}) {
    std::string reply = s.Run(args);
    EXPECT_EQ(reply.front(), '-') << reply;
    EXPECT_EQ(reply.find("\r\n"), reply.size() - 2) << reply;
  }
  EXPECT_EQ(s.errors_written(), 3u);
}

}  // namespace
}  // namespace bloomgate
