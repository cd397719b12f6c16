// A key name is hashed once per command: the dispatcher computes the hash
// and the key lock stripe, the keyspace shard and the map lookup all use it
// (issue: every command hashed each key three times or more).
#include <gtest/gtest.h>

#include <string>

#include "server/keyspace/key_ref.h"
#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

class KeyHashCount : public ::testing::Test {
 protected:
  KeyHashCount() : server_(MakeServer()), s_(server_.get()) {}

  // How many key names `args` hashed while it ran (sessions run on this thread).
  uint64_t HashesOf(const Args& args, std::string* reply = nullptr) {
    uint64_t before = KeyHashesOnThisThread();
    std::string out = s_.Run(args);
    if (reply != nullptr) *reply = out;
    return KeyHashesOnThisThread() - before;
  }

  std::unique_ptr<ServerContext> server_;
  Session s_;
};

TEST_F(KeyHashCount, ABloomAddToANewKeyHashesItsNameOnce) {
  std::string reply;
  EXPECT_EQ(HashesOf({"BF.ADD", "fresh", "item"}, &reply), 1u);
  EXPECT_EQ(reply, Int(1));
}

TEST_F(KeyHashCount, ReadsAndWritesOfAnExistingKeyHashItsNameOnce) {
  s_.Run({"BF.ADD", "bf", "a"});
  s_.Run({"CF.ADD", "cf", "a"});
  s_.Run({"CBF.ADD", "cbf", "a"});
  for (const Args& args : std::vector<Args>{{"BF.EXISTS", "bf", "a"},
                                            {"BF.MADD", "bf", "b", "c"},
                                            {"BF.INFO", "bf"},
                                            {"CF.EXISTS", "cf", "a"},
                                            {"CF.DEL", "cf", "a"},
                                            {"CBF.ADD", "cbf", "b"},
                                            {"TYPE", "bf"},
                                            {"EXPIRE", "bf", "100"},
                                            {"TTL", "bf"},
                                            {"PERSIST", "bf"}}) {
    EXPECT_EQ(HashesOf(args), 1u) << args[0];
  }
}

TEST_F(KeyHashCount, AMultiKeyCommandHashesEachNameOnce) {
  s_.Run({"BF.ADD", "a", "x"});
  s_.Run({"BF.ADD", "b", "x"});
  EXPECT_EQ(HashesOf({"EXISTS", "a", "b", "missing"}), 3u);
  EXPECT_EQ(HashesOf({"RENAME", "a", "c"}), 2u);
  std::string reply;
  EXPECT_EQ(HashesOf({"DEL", "b", "c", "missing"}, &reply), 3u);
  EXPECT_EQ(reply, Int(2));
}

TEST_F(KeyHashCount, CreatingAFilterWithReserveHashesItsNameOnce) {
  EXPECT_EQ(HashesOf({"BF.RESERVE", "r", "0.01", "100"}), 1u);
  EXPECT_EQ(HashesOf({"CF.RESERVE", "c", "100"}), 1u);
}

TEST_F(KeyHashCount, AWatchedTransactionHashesEachNameOnceAtWatchAndOnceAtExec) {
  s_.Run({"BF.ADD", "k", "x"});
  EXPECT_EQ(HashesOf({"WATCH", "k"}), 1u);
  EXPECT_EQ(HashesOf({"MULTI"}), 0u);
  EXPECT_EQ(HashesOf({"BF.ADD", "k", "y"}), 0u) << "queued, not run";
  std::string reply;
  // The watched key's hash was kept from WATCH; the queued BF.ADD's is made once.
  EXPECT_EQ(HashesOf({"EXEC"}, &reply), 1u);
  EXPECT_EQ(reply, Arr(1) + Int(1));
}

}  // namespace
}  // namespace bloomgate
