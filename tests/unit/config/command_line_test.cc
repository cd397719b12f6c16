#include "config/command_line.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "config/config_params.h"
#include "config/server_config.h"
#include "temp_dir.h"

namespace bloomgate {
namespace {

// Owns argv storage for ParseCommandLine, which takes a mutable char**.
class Argv {
 public:
  Argv(std::initializer_list<std::string> args) : strings_(args) {
    strings_.insert(strings_.begin(), "bloomgate");
    for (std::string& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(strings_.size()); }
  char** argv() { return pointers_.data(); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

struct Parsed {
  bool ok = false;
  CommandLine cmd;
  ConfigOverrides overrides;
  std::string error;
};

Parsed Parse(std::initializer_list<std::string> args) {
  Argv argv(args);
  Parsed parsed;
  parsed.ok = ParseCommandLine(argv.argc(), argv.argv(), &parsed.cmd,
                               &parsed.overrides, &parsed.error);
  return parsed;
}

// Parses and resolves onto a default config; expects both to succeed.
ServerConfig Resolve(std::initializer_list<std::string> args) {
  Parsed parsed = Parse(args);
  EXPECT_TRUE(parsed.ok) << parsed.error;
  ServerConfig config;
  std::string error;
  EXPECT_TRUE(ResolveConfig(parsed.cmd, parsed.overrides, &config, &error))
      << error;
  return config;
}

TEST(ParseCommandLine, NoArgumentsGiveNoFileNoOverridesAndDefaults) {
  Parsed parsed = Parse({});
  ASSERT_TRUE(parsed.ok) << parsed.error;
  EXPECT_EQ(parsed.cmd.config_path, "");
  EXPECT_FALSE(parsed.cmd.show_help);
  EXPECT_FALSE(parsed.cmd.show_version);
  EXPECT_TRUE(parsed.overrides.empty());
  EXPECT_TRUE(Resolve({}) == ServerConfig{});
}

TEST(ParseCommandLine, NamedFlagsTakeTheNextArgument) {
  Parsed parsed = Parse({"--config", "/etc/bloomgate.yaml", "--port", "6380",
                         "--bind", "0.0.0.0", "--threads", "2", "--loglevel",
                         "debug"});
  ASSERT_TRUE(parsed.ok) << parsed.error;
  EXPECT_EQ(parsed.cmd.config_path, "/etc/bloomgate.yaml");
  EXPECT_EQ(parsed.overrides, (ConfigOverrides{{"port", "6380"},
                                               {"bind", "0.0.0.0"},
                                               {"threads", "2"},
                                               {"loglevel", "debug"}}));
}

TEST(ParseCommandLine, EqualsFormWorksForEveryFlag) {
  Parsed parsed = Parse({"--config=/x.yaml", "--port=6380",
                         "--bf-error-rate=0.001", "--requirepass=a=b"});
  ASSERT_TRUE(parsed.ok) << parsed.error;
  EXPECT_EQ(parsed.cmd.config_path, "/x.yaml");
  EXPECT_EQ(parsed.overrides, (ConfigOverrides{{"port", "6380"},
                                               {"bf-error-rate", "0.001"},
                                               {"requirepass", "a=b"}}));
  // An explicitly empty value is a value.
  parsed = Parse({"--requirepass="});
  ASSERT_TRUE(parsed.ok) << parsed.error;
  EXPECT_EQ(parsed.overrides, (ConfigOverrides{{"requirepass", ""}}));
}

TEST(ParseCommandLine, EveryTableRowIsAFlagUnderItsCanonicalName) {
  for (const ConfigParam& param : AllConfigParams()) {
    const std::string value = GetConfigValue(ServerConfig{}, param.name);
    Parsed parsed = Parse({"--" + std::string(param.name), value});
    ASSERT_TRUE(parsed.ok) << param.name << ": " << parsed.error;
    ASSERT_EQ(parsed.overrides.size(), 1u);
    EXPECT_EQ(parsed.overrides[0].first, param.name);
    EXPECT_EQ(parsed.overrides[0].second, value);
  }
  Parsed parsed = Parse({"--MaxMemory", "1gb"});
  ASSERT_TRUE(parsed.ok) << parsed.error;
  EXPECT_EQ(parsed.overrides, (ConfigOverrides{{"maxmemory", "1gb"}}));
}

TEST(ParseCommandLine, HelpAndVersionAreFlagsWithoutValues) {
  EXPECT_TRUE(Parse({"-h"}).cmd.show_help);
  EXPECT_TRUE(Parse({"--help"}).cmd.show_help);
  EXPECT_TRUE(Parse({"--version"}).cmd.show_version);
  Parsed parsed = Parse({"--port", "1", "--help", "--version"});
  ASSERT_TRUE(parsed.ok) << parsed.error;
  EXPECT_TRUE(parsed.cmd.show_help);
  EXPECT_TRUE(parsed.cmd.show_version);
  parsed = Parse({"--help=yes"});
  EXPECT_FALSE(parsed.ok);
  EXPECT_EQ(parsed.error, "option --help takes no value");
}

TEST(ParseCommandLine, UnknownFlagIsAnErrorNamingIt) {
  Parsed parsed = Parse({"--port", "1", "--frobnicate", "3"});
  EXPECT_FALSE(parsed.ok);
  EXPECT_EQ(parsed.error, "unknown option '--frobnicate' (see --help)");
  parsed = Parse({"--max_filter_memory=1gb"});
  EXPECT_FALSE(parsed.ok);
  EXPECT_EQ(parsed.error, "unknown option '--max_filter_memory' (see --help)");
}

TEST(ParseCommandLine, PositionalAndSingleDashArgumentsAreErrors) {
  Parsed parsed = Parse({"bloomgate.yaml"});
  EXPECT_FALSE(parsed.ok);
  EXPECT_EQ(parsed.error,
            "unexpected argument 'bloomgate.yaml' (options start with --; see "
            "--help)");
  EXPECT_FALSE(Parse({"-port", "1"}).ok);
  EXPECT_FALSE(Parse({"--"}).ok);
}

TEST(ParseCommandLine, FlagWithoutValueIsAnError) {
  Parsed parsed = Parse({"--port"});
  EXPECT_FALSE(parsed.ok);
  EXPECT_EQ(parsed.error, "option --port needs a value");
  parsed = Parse({"--config"});
  EXPECT_FALSE(parsed.ok);
  EXPECT_EQ(parsed.error, "option --config needs a value");
  parsed = Parse({"--config="});
  EXPECT_FALSE(parsed.ok);
  EXPECT_EQ(parsed.error, "option --config needs a file name");
}

TEST(ParseCommandLine, ValueMayStartWithDashes) {
  Parsed parsed = Parse({"--requirepass", "--secret"});
  ASSERT_TRUE(parsed.ok) << parsed.error;
  EXPECT_EQ(parsed.overrides, (ConfigOverrides{{"requirepass", "--secret"}}));
}

TEST(ParseCommandLine, SecondConfigFileIsAnError) {
  Parsed parsed = Parse({"--config", "a.yaml", "--config=b.yaml"});
  EXPECT_FALSE(parsed.ok);
  EXPECT_EQ(parsed.error, "option --config given twice");
}

TEST(ParseCommandLine, OutputsAreResetOnEachCall) {
  Argv argv({"--port", "1"});
  CommandLine cmd;
  cmd.show_help = true;
  cmd.config_path = "stale.yaml";
  ConfigOverrides overrides = {{"timeout", "9"}};
  std::string error;
  ASSERT_TRUE(
      ParseCommandLine(argv.argc(), argv.argv(), &cmd, &overrides, &error));
  EXPECT_FALSE(cmd.show_help);
  EXPECT_EQ(cmd.config_path, "");
  EXPECT_EQ(overrides, (ConfigOverrides{{"port", "1"}}));
}

TEST(ResolveConfig, CommandLineOverridesBeatTheFile) {
  testutil::TempDir dir;
  const std::string path = dir.WriteFile(
      "bloomgate.yaml", "port: 7000\nmaxclients: 5\nloglevel: error\n");
  const ServerConfig config =
      Resolve({"--port", "7001", "--config", path, "--loglevel=trace"});
  EXPECT_EQ(config.port, 7001);        // flag beats file, even given first
  EXPECT_EQ(config.loglevel, "trace");  // flag beats file
  EXPECT_EQ(config.maxclients, 5u);     // file beats default
  EXPECT_EQ(config.timeout, 0u);        // default stays
}

TEST(ResolveConfig, LaterFlagForTheSameSettingWins) {
  EXPECT_EQ(Resolve({"--port", "7001", "--port=7002"}).port, 7002);
}

TEST(ResolveConfig, BindFlagTakesCommaOrSpaceSeparatedAddresses) {
  EXPECT_EQ(Resolve({"--bind", "127.0.0.1,::1"}).bind,
            (std::vector<std::string>{"127.0.0.1", "::1"}));
  EXPECT_EQ(Resolve({"--bind=10.0.0.1 10.0.0.2"}).bind,
            (std::vector<std::string>{"10.0.0.1", "10.0.0.2"}));
}

TEST(ResolveConfig, BadOverrideNamesTheFlagAndChangesNothing) {
  Parsed parsed = Parse({"--timeout", "5", "--port", "70000"});
  ASSERT_TRUE(parsed.ok) << parsed.error;
  ServerConfig config;
  std::string error;
  EXPECT_FALSE(ResolveConfig(parsed.cmd, parsed.overrides, &config, &error));
  EXPECT_EQ(error,
            "option --port: argument must be between 0 and 65535 inclusive");
  EXPECT_TRUE(config == ServerConfig{});  // --timeout 5 not applied either
}

TEST(ResolveConfig, BadFileFailsBeforeAnyOverrideAndChangesNothing) {
  testutil::TempDir dir;
  const std::string path = dir.WriteFile("bloomgate.yaml", "nonsense: 1\n");
  Parsed parsed = Parse({"--config", path, "--port", "7001"});
  ASSERT_TRUE(parsed.ok) << parsed.error;
  ServerConfig config;
  std::string error;
  EXPECT_FALSE(ResolveConfig(parsed.cmd, parsed.overrides, &config, &error));
  EXPECT_EQ(error, "config file " + path + ": unknown key 'nonsense'");
  EXPECT_TRUE(config == ServerConfig{});
}

TEST(ResolveConfig, StartsFromTheConfigItIsGiven) {
  Parsed parsed = Parse({"--timeout", "5"});
  ASSERT_TRUE(parsed.ok) << parsed.error;
  ServerConfig config;
  config.maxclients = 3;
  std::string error;
  ASSERT_TRUE(ResolveConfig(parsed.cmd, parsed.overrides, &config, &error))
      << error;
  EXPECT_EQ(config.maxclients, 3u);
  EXPECT_EQ(config.timeout, 5u);
}

TEST(CommandLineHelp, ListsEveryFlagWithItsDefaultAndStartUpOnlyMark) {
  const std::string help = CommandLineHelp();
  EXPECT_NE(help.find("--config <file>"), std::string::npos) << help;
  EXPECT_NE(help.find("-h, --help"), std::string::npos) << help;
  EXPECT_NE(help.find("--version"), std::string::npos) << help;
  EXPECT_NE(help.find("1kb = 1024"), std::string::npos) << help;
  EXPECT_NE(help.find("(default: 4gb)"), std::string::npos) << help;
  EXPECT_NE(help.find("(default: 512mb)"), std::string::npos) << help;
  for (const ConfigParam& param : AllConfigParams()) {
    const std::string flag = "  --" + std::string(param.name) + " ";
    const size_t at = help.find(flag);
    ASSERT_NE(at, std::string::npos) << param.name << " missing:\n" << help;
    const std::string line = help.substr(at, help.find('\n', at) - at);
    const std::string value = GetConfigValue(ServerConfig{}, param.name);
    const size_t open = line.find("(default: ");
    ASSERT_NE(open, std::string::npos) << line;
    const size_t first = open + std::string("(default: ").size();
    const std::string shown = line.substr(first, line.find(')', first) - first);
    if (param.type == ConfigType::kMemory) {
      // Memory defaults are shown in units ("4gb") but must mean the bytes.
      EXPECT_EQ(ParseMemoryValue(shown), ParseMemoryValue(value)) << line;
    } else {
      EXPECT_EQ(shown, value.empty() ? "\"\"" : value) << line;
    }
    EXPECT_NE(line.find(param.description), std::string::npos) << line;
    EXPECT_EQ(line.find("[start-up only]") != std::string::npos,
              !param.runtime_settable)
        << line;
  }
}

}  // namespace
}  // namespace bloomgate
