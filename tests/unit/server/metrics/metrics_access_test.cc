// Who may read /metrics (server/metrics/metrics_access.h) and the HTTP
// answers the endpoint gives (metrics_connection.h's MetricsResponse).
#include <gtest/gtest.h>

#include <string>

#include "server/metrics/metrics_access.h"
#include "server/metrics/metrics_collector.h"
#include "server/metrics/metrics_connection.h"
#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

const tcp::endpoint kLoopback(asio::ip::make_address("127.0.0.1"), 40000);
const tcp::endpoint kLoopback6(asio::ip::make_address("::1"), 40000);
const tcp::endpoint kRemote(asio::ip::make_address("10.1.2.3"), 40000);

// "Basic " + base64(user:password)
std::optional<std::string> Basic(std::string_view encoded) {
  return "Basic " + std::string(encoded);
}

TEST(MetricsAccess, BasicAuthDecodes) {
  auto pair = ParseBasicAuth("Basic ZGVmYXVsdDpzM2NyZXQ=");  // default:s3cret
  ASSERT_TRUE(pair.has_value());
  EXPECT_EQ(pair->first, "default");
  EXPECT_EQ(pair->second, "s3cret");
  // The scheme is case-insensitive; a password may hold colons.
  pair = ParseBasicAuth("basic dTphOmI=");  // u:a:b
  ASSERT_TRUE(pair.has_value());
  EXPECT_EQ(pair->first, "u");
  EXPECT_EQ(pair->second, "a:b");
  pair = ParseBasicAuth("Basic Og==");  // ":" : empty user and password
  ASSERT_TRUE(pair.has_value());
  EXPECT_EQ(pair->first, "");
  for (std::string_view bad : {"Bearer ZGVmYXVsdDpzM2NyZXQ=", "Basic", "Basic ZGVmYXVsdA==",
                               "Basic ZGVm!XVsdDpzM2NyZXQ=", "Basic ZGVmYXVsdDpzM2NyZXQ",
                               "Basic =GVmYXVsdDpzM2NyZXQ"}) {
    EXPECT_FALSE(ParseBasicAuth(bad).has_value()) << bad;
  }
}

TEST(MetricsAccess, WithoutAPasswordProtectedModeServesLoopbackOnly) {
  auto server = MakeServer();
  EXPECT_EQ(DecideMetricsAccess(*server, kLoopback, std::nullopt, 0), MetricsAccess::kAllowed);
  EXPECT_EQ(DecideMetricsAccess(*server, kLoopback6, std::nullopt, 0), MetricsAccess::kAllowed);
  EXPECT_EQ(DecideMetricsAccess(*server, kRemote, std::nullopt, 0),
            MetricsAccess::kProtectedMode);
  ServerConfig open;
  open.protected_mode = false;
  auto unprotected = MakeServer(open);
  EXPECT_EQ(DecideMetricsAccess(*unprotected, kRemote, std::nullopt, 0),
            MetricsAccess::kAllowed);
}

TEST(MetricsAccess, RequirepassNeedsBasicAuthAsDefault) {
  ServerConfig config;
  config.requirepass = "s3cret";
  auto server = MakeServer(config);
  EXPECT_EQ(DecideMetricsAccess(*server, kLoopback, std::nullopt, 0), MetricsAccess::kNeedsAuth);
  EXPECT_EQ(DecideMetricsAccess(*server, kLoopback, std::string("Basic ???"), 0),
            MetricsAccess::kNeedsAuth);
  EXPECT_EQ(DecideMetricsAccess(*server, kLoopback, Basic("ZGVmYXVsdDpzM2NyZXQ="), 0),
            MetricsAccess::kAllowed);
  // default:wrong
  EXPECT_EQ(DecideMetricsAccess(*server, kLoopback, Basic("ZGVmYXVsdDp3cm9uZw=="), 0),
            MetricsAccess::kWrongCredentials);
  // With a password, protected mode no longer applies: remote peers are
  // judged by their credentials.
  EXPECT_EQ(DecideMetricsAccess(*server, kRemote, Basic("ZGVmYXVsdDpzM2NyZXQ="), 0),
            MetricsAccess::kAllowed);
}

TEST(MetricsAccess, AclUsersAuthenticateAndNeedInfoAndAllKeys) {
  ServerConfig config;
  config.requirepass = "s3cret";
  auto server = MakeServer(config);
  Session admin(server.get());
  ASSERT_EQ(admin.Run({"ACL", "SETUSER", "prom", "on", ">pw", "~*", "+info"}), kOk);
  ASSERT_EQ(admin.Run({"ACL", "SETUSER", "edge", "on", ">pw", "~edge:*", "+@all"}), kOk);
  ASSERT_EQ(admin.Run({"ACL", "SETUSER", "noinfo", "on", ">pw", "~*", "+bf.add"}), kOk);
  ASSERT_EQ(admin.Run({"ACL", "SETUSER", "off", "off", ">pw", "~*", "+@all"}), kOk);
  // prom:pw, edge:pw, noinfo:pw, off:pw, prom:nope
  EXPECT_EQ(DecideMetricsAccess(*server, kRemote, Basic("cHJvbTpwdw=="), 0),
            MetricsAccess::kAllowed);
  EXPECT_EQ(DecideMetricsAccess(*server, kRemote, Basic("ZWRnZTpwdw=="), 0),
            MetricsAccess::kNotPermitted);
  EXPECT_EQ(DecideMetricsAccess(*server, kRemote, Basic("bm9pbmZvOnB3"), 0),
            MetricsAccess::kNotPermitted);
  EXPECT_EQ(DecideMetricsAccess(*server, kRemote, Basic("b2ZmOnB3"), 0),
            MetricsAccess::kWrongCredentials);
  EXPECT_EQ(DecideMetricsAccess(*server, kRemote, Basic("cHJvbTpub3Bl"), 0),
            MetricsAccess::kWrongCredentials);
}

TEST(MetricsAccess, FailuresShareAuthsThrottle) {
  ServerConfig config;
  config.requirepass = "s3cret";
  auto server = MakeServer(config);
  MetricsAccess last = MetricsAccess::kAllowed;
  int failures = 0;
  for (; failures < 1000; ++failures) {
    last = DecideMetricsAccess(*server, kRemote, Basic("ZGVmYXVsdDp3cm9uZw=="), 1000);
    if (last != MetricsAccess::kWrongCredentials) break;
  }
  EXPECT_EQ(last, MetricsAccess::kThrottled) << "after " << failures << " failures";
  // Even the right password waits its turn, as AUTH does.
  EXPECT_EQ(DecideMetricsAccess(*server, kRemote, Basic("ZGVmYXVsdDpzM2NyZXQ="), 1000),
            MetricsAccess::kThrottled);
}

HttpRequest Get(std::string target, std::optional<std::string> authorization = std::nullopt) {
  HttpRequest request;
  request.method = "GET";
  request.target = std::move(target);
  request.version = "HTTP/1.1";
  request.authorization = std::move(authorization);
  return request;
}

TEST(MetricsResponse, AScrapeGetsThePageInFormat004) {
  auto server = MakeServer();
  MetricsCollector collector(*server);
  const std::string response = MetricsResponse(*server, collector, kLoopback, Get("/metrics"), 0);
  EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response;
  EXPECT_NE(response.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
            std::string::npos);
  EXPECT_NE(response.find("Connection: close\r\n"), std::string::npos);
  const size_t body = response.find("\r\n\r\n") + 4;
  EXPECT_NE(response.find("Content-Length: " + std::to_string(response.size() - body) + "\r\n"),
            std::string::npos);
  EXPECT_NE(response.find("\nredis_up 1\n"), std::string::npos);
}

TEST(MetricsResponse, OtherPathsAre404AndOtherMethods405) {
  auto server = MakeServer();
  MetricsCollector collector(*server);
  EXPECT_EQ(MetricsResponse(*server, collector, kLoopback, Get("/"), 0)
                .rfind("HTTP/1.1 404 Not Found\r\n", 0),
            0u);
  EXPECT_EQ(MetricsResponse(*server, collector, kLoopback, Get("/metricsx"), 0)
                .rfind("HTTP/1.1 404 ", 0),
            0u);
  HttpRequest post = Get("/metrics");
  post.method = "POST";
  const std::string response = MetricsResponse(*server, collector, kLoopback, post, 0);
  EXPECT_EQ(response.rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0), 0u);
  EXPECT_NE(response.find("Allow: GET, HEAD\r\n"), std::string::npos);
  HttpRequest head = Get("/metrics?x=1");
  head.method = "HEAD";
  const std::string head_response = MetricsResponse(*server, collector, kLoopback, head, 0);
  EXPECT_EQ(head_response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_EQ(head_response.substr(head_response.find("\r\n\r\n") + 4), "");
}

TEST(MetricsResponse, MissingOrWrongCredentialsAre401WithAChallenge) {
  ServerConfig config;
  config.requirepass = "s3cret";
  auto server = MakeServer(config);
  MetricsCollector collector(*server);
  for (auto auth : {std::optional<std::string>(), Basic("ZGVmYXVsdDp3cm9uZw==")}) {
    const std::string response =
        MetricsResponse(*server, collector, kLoopback, Get("/metrics", auth), 0);
    EXPECT_EQ(response.rfind("HTTP/1.1 401 Unauthorized\r\n", 0), 0u) << response;
    EXPECT_NE(response.find("WWW-Authenticate: Basic realm=\"bloomgate\"\r\n"),
              std::string::npos);
    EXPECT_EQ(response.find("redis_up"), std::string::npos);
  }
  EXPECT_EQ(MetricsResponse(*server, collector, kLoopback,
                            Get("/metrics", Basic("ZGVmYXVsdDpzM2NyZXQ=")), 0)
                .rfind("HTTP/1.1 200 OK\r\n", 0),
            0u);
}

TEST(MetricsResponse, ProtectedModeRefusesARemotePeerWith403) {
  auto server = MakeServer();
  MetricsCollector collector(*server);
  EXPECT_EQ(MetricsResponse(*server, collector, kRemote, Get("/metrics"), 0)
                .rfind("HTTP/1.1 403 Forbidden\r\n", 0),
            0u);
}

}  // namespace
}  // namespace bloomgate
