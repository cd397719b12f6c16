// The config file's `users` key: a list of ACL user lines, kept as text for
// the server to check (config/ knows no commands).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/server_config.h"
#include "temp_dir.h"

namespace bloomgate {
namespace {

class ConfigUsers : public ::testing::Test {
 protected:
  bool Load(const std::string& yaml) {
    config_ = ServerConfig{};
    config_.port = 7000;
    error_.clear();
    return LoadConfigFile(dir_.WriteFile("bloomgate.yaml", yaml), &config_, &error_);
  }
  testutil::TempDir dir_;
  ServerConfig config_;
  std::string error_;
};

TEST_F(ConfigUsers, AListOfUserLinesIsKeptInOrder) {
  ASSERT_TRUE(Load("port: 6400\n"
                   "users:\n"
                   "  - \"edge on #0123 ~edge:* +bf.add\"\n"
                   "  - default on >pw allkeys allcommands\n"))
      << error_;
  EXPECT_EQ(config_.users, (std::vector<std::string>{"edge on #0123 ~edge:* +bf.add",
                                                     "default on >pw allkeys allcommands"}));
  EXPECT_EQ(config_.port, 6400);
}

TEST_F(ConfigUsers, NoUsersByDefaultAndAnEmptyKeyMeansNone) {
  ASSERT_TRUE(Load("port: 6400\n")) << error_;
  EXPECT_TRUE(config_.users.empty());
  ASSERT_TRUE(Load("users:\n")) << error_;
  EXPECT_TRUE(config_.users.empty());
}

TEST_F(ConfigUsers, BadShapesAreRefusedWithoutChange) {
  for (const std::string yaml : {"users: edge on\n", "users:\n  - [a, b]\n",
                                 "users:\n  - \"  \"\n", "users:\n  edge: on\n",
                                 "users: []\nUsers: []\n"}) {
    EXPECT_FALSE(Load("port: 6400\n" + yaml)) << yaml;
    EXPECT_NE(error_.find("'users'"), std::string::npos) << error_;
    EXPECT_EQ(config_.port, 7000) << yaml;
    EXPECT_TRUE(config_.users.empty()) << yaml;
  }
}

}  // namespace
}  // namespace bloomgate
