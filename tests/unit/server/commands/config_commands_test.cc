// CONFIG GET / CONFIG SET through the dispatcher: Redis's texts, and that a
// change reaches what reads it (filter defaults and memory caps).
#include <gtest/gtest.h>

#include <string>

#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

TEST(ConfigCommands, GetReturnsNameValuePairs) {
  ServerConfig config;
  config.bf_initial_size = 250;
  auto server = MakeServer(config);
  Session s(server.get());
  EXPECT_EQ(s.Run({"CONFIG", "GET", "bf-initial-size"}),
            Arr(2) + Bulk("bf-initial-size") + Bulk("250"));
  EXPECT_EQ(s.Run({"CONFIG", "GET", "BF-INITIAL-SIZE"}),
            Arr(2) + Bulk("bf-initial-size") + Bulk("250"));
  EXPECT_EQ(s.Run({"CONFIG", "GET", "nosuch"}), Arr(0));
  s.set_resp3(true);
  EXPECT_EQ(s.Run({"CONFIG", "GET", "bf-initial-size"}),
            Map(1) + Bulk("bf-initial-size") + Bulk("250"));
}

TEST(ConfigCommands, SetOfAnUnknownParameterUsesRedisText) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"CONFIG", "SET", "nosuch", "1"}),
            Err("ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"));
}

TEST(ConfigCommands, SetOfAnImmutableParameterIsAnErrError) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"CONFIG", "SET", "port", "7000"}),
            Err("ERR CONFIG SET failed (possibly related to argument 'port') - can't set "
                "immutable config"));
}

TEST(ConfigCommands, SetOfABadValueIsAnErrErrorAndChangesNothing) {
  auto server = MakeServer();
  Session s(server.get());
  std::string reply = s.Run({"CONFIG", "SET", "bf-initial-size", "100", "maxclients", "x"});
  EXPECT_EQ(reply.rfind("-ERR CONFIG SET failed (possibly related to argument 'maxclients') - ",
                        0),
            0u)
      << reply;
  EXPECT_EQ(s.Run({"CONFIG", "GET", "bf-initial-size"}),
            Arr(2) + Bulk("bf-initial-size") + Bulk("100"));
}

TEST(ConfigCommands, SetNeedsPairs) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"CONFIG", "SET", "bf-initial-size"}), WrongArity("config|set"));
  EXPECT_EQ(s.Run({"CONFIG", "SET", "bf-initial-size", "5", "maxclients"}),
            WrongArity("config|set"));
}

TEST(ConfigCommands, SetMaxFilterMemoryAppliesToNewFilters) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"CONFIG", "SET", "max-filter-memory", "64kb"}), kOk);
  EXPECT_TRUE(IsMemoryRefusal(s.Run({"BF.RESERVE", "big", "0.01", "1000000"}),
                              "ERR Insufficient memory to create filter",
                              " bytes, max-filter-memory is 65536"));
  EXPECT_EQ(s.Run({"CONFIG", "SET", "max-filter-memory", "64mb"}), kOk);
  EXPECT_EQ(s.Run({"BF.RESERVE", "big", "0.01", "1000000"}), kOk);
}

TEST(ConfigCommands, SetMaxmemoryAppliesToTheSharedBudget) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"CONFIG", "SET", "maxmemory", "64kb"}), kOk);
  EXPECT_EQ(server->budget.limit(), 64u * 1024);
  EXPECT_TRUE(IsMemoryRefusal(s.Run({"BF.RESERVE", "big", "0.01", "1000000"}),
                              "ERR Insufficient memory to create filter",
                              " bytes free of 65536"));
  EXPECT_EQ(s.Run({"DBSIZE"}), Int(0));
}

TEST(ConfigCommands, SetBloomDefaultsApplyToImplicitlyCreatedFilters) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"CONFIG", "SET", "bf-initial-size", "77", "bf-expansion-factor", "0"}), kOk);
  EXPECT_EQ(s.Run({"BF.ADD", "k", "a"}), Int(1));
  EXPECT_EQ(s.Run({"BF.INFO", "k", "CAPACITY"}), Arr(1) + Int(77));
  EXPECT_EQ(s.Run({"BF.INFO", "k", "EXPANSION"}), Arr(1) + kNil);
}

}  // namespace
}  // namespace bloomgate
