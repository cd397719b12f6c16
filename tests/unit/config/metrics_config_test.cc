// metrics-port and metrics-top-filters: the file, the command line, and
// their ranges.
#include <gtest/gtest.h>

#include <string>

#include "config/command_line.h"
#include "config/config_params.h"

namespace bloomgate {
namespace {

TEST(MetricsConfig, OffByDefaultWithAHundredFilters) {
  ServerConfig config;
  EXPECT_EQ(GetConfigValue(config, "metrics-port"), "0");
  EXPECT_EQ(GetConfigValue(config, "metrics-top-filters"), "100");
}

TEST(MetricsConfig, PortIsAStartUpOnlyPortNumber) {
  const ConfigParam* port = FindConfigParam("metrics-port");
  ASSERT_NE(port, nullptr);
  EXPECT_FALSE(port->runtime_settable);
  ServerConfig config;
  std::string error;
  EXPECT_TRUE(SetConfigValue(&config, "metrics-port", "9121", &error)) << error;
  EXPECT_EQ(config.metrics_port, 9121);
  EXPECT_FALSE(SetConfigValue(&config, "metrics-port", "65536", &error));
  EXPECT_FALSE(SetConfigValue(&config, "metrics-port", "-1", &error));
  EXPECT_EQ(config.metrics_port, 9121);
}

TEST(MetricsConfig, TopFiltersIsSettableAtRunTimeUpToTenThousand) {
  const ConfigParam* top = FindConfigParam("metrics-top-filters");
  ASSERT_NE(top, nullptr);
  EXPECT_TRUE(top->runtime_settable);
  ServerConfig config;
  std::string error;
  EXPECT_TRUE(SetConfigValue(&config, "metrics-top-filters", "0", &error)) << error;
  EXPECT_TRUE(SetConfigValue(&config, "metrics-top-filters", "10000", &error)) << error;
  EXPECT_FALSE(SetConfigValue(&config, "metrics-top-filters", "10001", &error));
  EXPECT_EQ(config.metrics_top_filters, 10000u);
}

TEST(MetricsConfig, TheCommandLineSetsBoth) {
  const char* argv[] = {"bloomgate", "--metrics-port", "9121", "--metrics-top-filters", "5"};
  CommandLine cmd;
  ConfigOverrides overrides;
  std::string error;
  ASSERT_TRUE(ParseCommandLine(5, const_cast<char**>(argv), &cmd, &overrides, &error)) << error;
  ServerConfig config;
  ASSERT_TRUE(ResolveConfig(cmd, overrides, &config, &error)) << error;
  EXPECT_EQ(config.metrics_port, 9121);
  EXPECT_EQ(config.metrics_top_filters, 5u);
}

}  // namespace
}  // namespace bloomgate
