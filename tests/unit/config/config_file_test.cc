#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "config/config_params.h"
#include "config/server_config.h"
#include "temp_dir.h"

namespace bloomgate {
namespace {

// The repository's root comes from tests/CMakeLists.txt (__FILE__ is
// relative under a compiler cache with a base_dir).
std::string ExampleConfigPath() {
  return (std::filesystem::path(BLOOMGATE_SOURCE_DIR) / "config/bloomgate.example.yaml")
      .lexically_normal()
      .string();
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class ConfigFile : public ::testing::Test {
 protected:
  // Loads `yaml` from a fresh file into a default config.
  bool Load(const std::string& yaml) {
    path_ = dir_.WriteFile("bloomgate.yaml", yaml);
    config_ = ServerConfig{};
    error_.clear();
    return LoadConfigFile(path_, &config_, &error_);
  }

  // Loads `yaml` into a non-default config and expects a refusal that
  // leaves that config exactly as it was.
  void ExpectRefusedWithoutChange(const std::string& yaml) {
    path_ = dir_.WriteFile("bloomgate.yaml", yaml);
    ServerConfig config;
    config.port = 7777;
    config.bind = {"10.0.0.1"};
    const ServerConfig before = config;
    error_.clear();
    EXPECT_FALSE(LoadConfigFile(path_, &config, &error_)) << yaml;
    EXPECT_TRUE(config == before) << "config changed by a refused file";
  }

  testutil::TempDir dir_;
  std::string path_;
  ServerConfig config_;
  std::string error_;
};

TEST_F(ConfigFile, ExampleFileLoadsToExactlyTheDefaults) {
  ServerConfig config;
  config.port = 1;  // so that "loaded" cannot pass by loading nothing
  std::string error;
  ASSERT_TRUE(LoadConfigFile(ExampleConfigPath(), &config, &error)) << error;
  EXPECT_TRUE(config == ServerConfig{});
  for (const ConfigParam& param : AllConfigParams()) {
    EXPECT_EQ(GetConfigValue(config, param.name),
              GetConfigValue(ServerConfig{}, param.name))
        << param.name;
  }
}

TEST_F(ConfigFile, ExampleFileListsEveryKeyOfTheTable) {
  // Top-level keys are the lines that start with neither '#', a space nor
  // a list dash; read as text so the test needs no YAML library of its own.
  std::ifstream in(ExampleConfigPath());
  ASSERT_TRUE(in.good()) << ExampleConfigPath();
  std::set<std::string> in_file;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line[0] == ' ' || line[0] == '-') {
      continue;
    }
    in_file.insert(line.substr(0, line.find(':')));
  }
  std::set<std::string> in_table;
  for (const ConfigParam& param : AllConfigParams()) {
    in_table.insert(std::string(param.name));
  }
  EXPECT_EQ(in_file, in_table);
}

TEST_F(ConfigFile, EveryKeyCanBeSet) {
  ASSERT_TRUE(Load(
      "bind: 0.0.0.0 ::1\n"
      "port: 6380\n"
      "threads: 4\n"
      "loglevel: warn\n"
      "logfile: /tmp/bloomgate.log\n"
      "requirepass: hunter2\n"
      "maxclients: 100\n"
      "maxmemory: 8gb\n"
      "max-filter-memory: 512mb\n"
      "proto-max-bulk-len: 16mb\n"
      "client-output-buffer-limit: 32mb\n"
      "timeout: 60\n"
      "bf-error-rate: 0.001\n"
      "bf-initial-size: 1000\n"
      "bf-expansion-factor: 0\n"))
      << error_;
  EXPECT_EQ(config_.bind, (std::vector<std::string>{"0.0.0.0", "::1"}));
  EXPECT_EQ(config_.port, 6380);
  EXPECT_EQ(config_.threads, 4u);
  EXPECT_EQ(config_.loglevel, "warn");
  EXPECT_EQ(config_.logfile, "/tmp/bloomgate.log");
  EXPECT_EQ(config_.requirepass, "hunter2");
  EXPECT_EQ(config_.maxclients, 100u);
  EXPECT_EQ(config_.maxmemory, 8ull << 30);
  EXPECT_EQ(config_.max_filter_memory, 512ull << 20);
  EXPECT_EQ(config_.proto_max_bulk_len, 16ull << 20);
  EXPECT_EQ(config_.client_output_buffer_limit, 32ull << 20);
  EXPECT_EQ(config_.timeout, 60u);
  EXPECT_EQ(config_.bf_error_rate, 0.001);
  EXPECT_EQ(config_.bf_initial_size, 1000u);
  EXPECT_EQ(config_.bf_expansion_factor, 0u);
}

TEST_F(ConfigFile, KeysNotInTheFileKeepTheirValues) {
  path_ = dir_.WriteFile("bloomgate.yaml", "port: 6390\n");
  ServerConfig config;
  config.maxclients = 5;
  std::string error;
  ASSERT_TRUE(LoadConfigFile(path_, &config, &error)) << error;
  EXPECT_EQ(config.port, 6390);
  EXPECT_EQ(config.maxclients, 5u);
}

TEST_F(ConfigFile, BindMayBeAYamlList) {
  ASSERT_TRUE(Load("bind: [\"127.0.0.1\", \"::1\"]\n")) << error_;
  EXPECT_EQ(config_.bind, (std::vector<std::string>{"127.0.0.1", "::1"}));
  ASSERT_TRUE(Load("bind:\n  - 10.0.0.1\n  - 10.0.0.2\n")) << error_;
  EXPECT_EQ(config_.bind, (std::vector<std::string>{"10.0.0.1", "10.0.0.2"}));
}

TEST_F(ConfigFile, QuotedNullAndEmptyValuesMeanWhatTheySay) {
  ASSERT_TRUE(Load("port: \"6400\"\nlogfile:\nrequirepass: ''\n")) << error_;
  EXPECT_EQ(config_.port, 6400);
  EXPECT_EQ(config_.logfile, "");
  EXPECT_EQ(config_.requirepass, "");
  ASSERT_TRUE(Load("requirepass: \"null\"\n")) << error_;
  EXPECT_EQ(config_.requirepass, "null");
}

TEST_F(ConfigFile, KeysIgnoreCase) {
  ASSERT_TRUE(Load("Port: 6401\nMAXCLIENTS: 9\n")) << error_;
  EXPECT_EQ(config_.port, 6401);
  EXPECT_EQ(config_.maxclients, 9u);
}

TEST_F(ConfigFile, EmptyOrCommentOnlyFileKeepsEverything) {
  ASSERT_TRUE(Load("")) << error_;
  EXPECT_TRUE(config_ == ServerConfig{});
  ASSERT_TRUE(Load("# nothing here\n\n")) << error_;
  EXPECT_TRUE(config_ == ServerConfig{});
}

TEST_F(ConfigFile, UnknownKeyIsNamed) {
  ExpectRefusedWithoutChange("port: 6380\nmaxclient: 10\n");
  EXPECT_EQ(error_, "config file " + path_ + ": unknown key 'maxclient'; did you mean 'maxclients'?");
}

TEST_F(ConfigFile, UnknownKeyFarFromEveryNameGetsNoHint) {
  ExpectRefusedWithoutChange("nonsense: 1\n");
  EXPECT_EQ(error_, "config file " + path_ + ": unknown key 'nonsense'");
}

TEST_F(ConfigFile, UnknownKeyWithUnderscoresSuggestsTheDashedName) {
  ExpectRefusedWithoutChange("max_filter_memory: 1mb\n");
  EXPECT_EQ(error_, "config file " + path_ +
                        ": unknown key 'max_filter_memory'; did you mean 'max-filter-memory'?");
}

TEST_F(ConfigFile, BadValueNamesFileKeyAndRangeAndAppliesNothing) {
  // The good key before the bad one must not be applied either.
  ExpectRefusedWithoutChange("port: 6380\nmaxclients: 0\n");
  EXPECT_EQ(error_, "config file " + path_ +
                        ": key 'maxclients': argument must be between 1 and "
                        "1000000 inclusive");
}

TEST_F(ConfigFile, BadPortValuesAreNamed) {
  ExpectRefusedWithoutChange("port: 70000\n");
  EXPECT_EQ(error_, "config file " + path_ +
                        ": key 'port': argument must be between 0 and 65535 "
                        "inclusive");
  ExpectRefusedWithoutChange("port: abc\n");
  EXPECT_EQ(error_, "config file " + path_ +
                        ": key 'port': argument must be an integer between 0 "
                        "and 65535 inclusive");
}

TEST_F(ConfigFile, BadMemoryRatioAndLevelValuesAreNamed) {
  ExpectRefusedWithoutChange("maxmemory: -1gb\n");
  EXPECT_EQ(error_, "config file " + path_ +
                        ": key 'maxmemory': argument must be a memory value");
  ExpectRefusedWithoutChange("bf-error-rate: 0\n");
  EXPECT_EQ(error_, "config file " + path_ +
                        ": key 'bf-error-rate': argument must be between 0 "
                        "and 1 exclusive");
  ExpectRefusedWithoutChange("bf-error-rate: 1\n");
  EXPECT_EQ(error_, "config file " + path_ +
                        ": key 'bf-error-rate': argument must be between 0 "
                        "and 1 exclusive");
  ExpectRefusedWithoutChange("bf-error-rate: x\n");
  EXPECT_EQ(error_, "config file " + path_ +
                        ": key 'bf-error-rate': argument must be a number "
                        "between 0 and 1 exclusive");
  ExpectRefusedWithoutChange("loglevel: loud\n");
  EXPECT_EQ(error_, "config file " + path_ +
                        ": key 'loglevel': invalid loglevel 'loud': must be "
                        "one of trace, debug, info, warn, error, critical, off, verbose, "
                        "notice, warning, nothing");
}

TEST_F(ConfigFile, MemoryValuesTakeRedisUnits) {
  ASSERT_TRUE(Load("maxmemory: 2GB\nmax-filter-memory: 10m\n"
                   "client-output-buffer-limit: 1048576\n"))
      << error_;
  EXPECT_EQ(config_.maxmemory, 2ull << 30);
  EXPECT_EQ(config_.max_filter_memory, 10'000'000u);
  EXPECT_EQ(config_.client_output_buffer_limit, 1u << 20);
}

TEST_F(ConfigFile, SyntaxErrorReportsLineAndColumn) {
  ExpectRefusedWithoutChange("port: 6380\nbind: [127.0.0.1\nmaxclients: 5\n");
  EXPECT_TRUE(Contains(error_, "config file " + path_ + ": YAML syntax error"))
      << error_;
  EXPECT_TRUE(Contains(error_, "at line 3, column 1")) << error_;

  ExpectRefusedWithoutChange("port: 6380\n  maxclients: 5\n");
  EXPECT_TRUE(Contains(error_, "YAML syntax error at line 2,")) << error_;
}

TEST_F(ConfigFile, TopLevelMustBeAMap) {
  ExpectRefusedWithoutChange("- port\n- 6380\n");
  EXPECT_EQ(error_, "config file " + path_ +
                        ": must be a map of 'key: value' lines, one per "
                        "setting");
  ExpectRefusedWithoutChange("just text\n");
}

TEST_F(ConfigFile, ValuesMustBeScalarsExceptABindList) {
  ExpectRefusedWithoutChange("port: [6380]\n");
  EXPECT_EQ(error_, "config file " + path_ +
                        ": key 'port': value must be a single value, not a "
                        "list or map");
  ExpectRefusedWithoutChange("maxmemory: {size: 1gb}\n");
  ExpectRefusedWithoutChange("bind: {a: 127.0.0.1}\n");
  ExpectRefusedWithoutChange("bind: [[127.0.0.1]]\n");
  EXPECT_EQ(error_, "config file " + path_ +
                        ": key 'bind': list items must be plain addresses");
}

TEST_F(ConfigFile, RepeatedKeyIsRefusedWithBothLines) {
  ExpectRefusedWithoutChange("port: 6380\ntimeout: 5\nport: 6381\n");
  EXPECT_EQ(error_, "config file " + path_ +
                        ": key 'port' appears twice (lines 1 and 3)");
  ExpectRefusedWithoutChange("port: 6380\nPORT: 6381\n");
}

TEST_F(ConfigFile, MissingFileIsAnErrorNamingIt) {
  ServerConfig config;
  std::string error;
  const std::string path = (dir_.path() / "absent.yaml").string();
  EXPECT_FALSE(LoadConfigFile(path, &config, &error));
  EXPECT_EQ(error,
            "config file " + path + ": cannot open: No such file or directory");
  EXPECT_TRUE(config == ServerConfig{});
}

TEST_F(ConfigFile, DirectoryIsAnError) {
  ServerConfig config;
  std::string error;
  EXPECT_FALSE(LoadConfigFile(dir_.path().string(), &config, &error));
  EXPECT_EQ(error, "config file " + dir_.path().string() + ": is a directory");
}

}  // namespace
}  // namespace bloomgate
