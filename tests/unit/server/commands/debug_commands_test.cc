// DEBUG DIGEST-VALUE (server/commands/server/debug_commands.cc) and the
// enable-debug-command gate, through the dispatcher.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../session.h"
#include "server/commands/errors.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

std::unique_ptr<ServerContext> DebugServer(const char* setting) {
  ServerConfig config;
  config.enable_debug_command = setting;
  return MakeServer(config);
}

TEST(DebugDigestValue, EqualFiltersShareADigestAndAnyDifferenceChangesIt) {
  auto server = DebugServer("yes");
  Session s(server.get());
  // b is a's deep copy (its seed too), as a MIGRATE'd key is on the target;
  // c was made apart, with its own seed.
  ASSERT_EQ(s.Run({"BF.RESERVE", "a", "0.01", "1000"}), kOk);
  ASSERT_EQ(s.Run({"BF.ADD", "a", "x"}), Int(1));
  ASSERT_EQ(s.Run({"COPY", "a", "b"}), Int(1));
  ASSERT_EQ(s.Run({"BF.RESERVE", "c", "0.01", "1000"}), kOk);
  ASSERT_EQ(s.Run({"BF.ADD", "c", "x"}), Int(1));
  const std::string reply = s.Run({"DEBUG", "DIGEST-VALUE", "a", "b", "c", "missing"});
  ASSERT_TRUE(reply.starts_with(Arr(4))) << reply;
  std::vector<std::string> digests;
  for (size_t pos = reply.find('+'); pos != std::string::npos; pos = reply.find('+', pos + 1)) {
    digests.push_back(reply.substr(pos + 1, reply.find("\r\n", pos) - pos - 1));
  }
  ASSERT_EQ(digests.size(), 4u) << reply;
  for (const std::string& digest : digests) EXPECT_EQ(digest.size(), 40u);
  EXPECT_EQ(digests[0], digests[1]);  // same contents, same parameters
  EXPECT_NE(digests[0], digests[2]);  // another seed
  EXPECT_EQ(digests[3], std::string(40, '0'));
  ASSERT_EQ(s.Run({"BF.ADD", "b", "y"}), Int(1));
  EXPECT_NE(s.Run({"DEBUG", "DIGEST-VALUE", "a"}), s.Run({"DEBUG", "DIGEST-VALUE", "b"}));
  EXPECT_TRUE(s.Run({"DEBUG", "DIGEST-VALUE"}).starts_with("-ERR wrong number of arguments"));
}

TEST(DebugDigestValue, RefusedUnlessEnableDebugCommandAllowsIt) {
  auto server = DebugServer("no");
  Session s(server.get());
  EXPECT_EQ(s.Run({"DEBUG", "DIGEST-VALUE", "a"}), Err(errors::kDebugNotAllowed));
  // "local": a session without a peer address is no local connection.
  auto local = DebugServer("local");
  Session remote(local.get());
  EXPECT_EQ(remote.Run({"DEBUG", "DIGEST-VALUE", "a"}), Err(errors::kDebugNotAllowed));
  // Nothing else of Redis's DEBUG is served.
  auto open = DebugServer("yes");
  Session t(open.get());
  EXPECT_TRUE(t.Run({"DEBUG", "SLEEP", "0"}).starts_with("-ERR unknown subcommand"));
}

}  // namespace
}  // namespace bloomgate
