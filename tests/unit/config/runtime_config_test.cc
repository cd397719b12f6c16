#include "config/runtime_config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace bloomgate {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

// The applier is how TLS reloads its certificates: it sees the values about
// to be committed and can veto them all.
TEST(RuntimeConfig, ApplierSeesTheNextConfigAndTheNamesSetInOrder) {
  RuntimeConfig config{ServerConfig{}};
  std::vector<std::string> seen_names;
  std::string seen_cert;
  std::string error;
  ASSERT_TRUE(config.Set({{"maxclients", "7"}, {"tls-cert-file", "/b.crt"}}, &error, nullptr,
                         [&](const ServerConfig& next, const std::vector<std::string>& names,
                             std::string*, std::string*) {
                           seen_names = names;
                           seen_cert = next.tls_cert_file;
                           return true;
                         }))
      << error;
  EXPECT_EQ(seen_names, (std::vector<std::string>{"maxclients", "tls-cert-file"}));
  EXPECT_EQ(seen_cert, "/b.crt");
  EXPECT_EQ(config.Get().tls_cert_file, "/b.crt");
  EXPECT_EQ(config.Get().maxclients, 7u);
}

TEST(RuntimeConfig, ApplierRefusalCommitsNothingAndNamesItsParameter) {
  RuntimeConfig config{ServerConfig{}};
  std::string error;
  EXPECT_FALSE(config.Set({{"maxclients", "7"}, {"tls-cert-file", "/bad.crt"}}, &error, nullptr,
                          [](const ServerConfig&, const std::vector<std::string>&,
                             std::string* param, std::string* why) {
                            *param = "tls-cert-file";
                            *why = "Unable to update TLS configuration: no";
                            return false;
                          }));
  EXPECT_EQ(error,
            "CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to "
            "update TLS configuration: no");
  EXPECT_TRUE(config.Get() == ServerConfig{});
}

}  // namespace
}  // namespace bloomgate
