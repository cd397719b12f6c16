// One CF.INSERT spends at most CommandKickBudget(items) cuckoo kicks
// (filters/limits.h), however high MAXITERATIONS is: the bound on how long
// one command holds its I/O thread. Counted in kicks, not timed.
#include <gtest/gtest.h>

#include <string>

#include "filters/cuckoo_filter.h"
#include "filters/limits.h"
#include "server/base/clock.h"
#include "../session.h"

namespace bloomgate {
namespace {

using testing::Args;
using testing::Session;

uint64_t Kicks(ServerContext& server, const std::string& key) {
  EntryPtr entry = server.keyspace.Find(key, NowMs());
  return entry == nullptr ? 0 : entry->get<CuckooFilter>()->kicks();
}

Args InsertArgs(const std::string& key, int items) {
  Args args = {"CF.INSERT", key, "NOCREATE", "ITEMS"};
  for (int i = 0; i < items; ++i) args.push_back("item:" + std::to_string(i));
  return args;
}

TEST(CuckooKickBudget, ALongInsertIntoAFullFilterStopsKickingAtTheBudget) {
  auto server = testing::MakeServer();
  Session session(server.get());
  // 64 one-slot buckets at 65,535 kicks per item: without the budget the 300
  // items (~240 of them with no room) would make ~15.7M kicks.
  ASSERT_EQ(session.Run({"CF.RESERVE", "k", "64", "BUCKETSIZE", "1", "MAXITERATIONS", "65535",
                         "EXPANSION", "0"}),
            testing::kOk);
  const std::string reply = session.Run(InsertArgs("k", 300));
  ASSERT_EQ(reply.rfind("*300\r\n", 0), 0u) << reply.substr(0, 40);
  EXPECT_NE(reply.find(":-1\r\n"), std::string::npos);  // full, as RedisBloom answers
  EXPECT_LE(Kicks(*server, "k"), CommandKickBudget(300));
  EXPECT_GT(Kicks(*server, "k"), kCommandKickAllowance / 2);  // it did kick, up to the budget
  // The next command gets a budget of its own.
  const uint64_t before = Kicks(*server, "k");
  session.Run({"CF.ADD", "k", "one-more"});
  EXPECT_EQ(Kicks(*server, "k") - before, 65535u);
}

}  // namespace
}  // namespace bloomgate
