// AUTH throttling: per connection, per address, and through the commands.
#include "server/access/auth_throttle.h"

#include <gtest/gtest.h>

#include "server/commands/errors.h"
#include "../session.h"

namespace bloomgate::testing {
namespace {

TEST(AuthThrottle, AnAddressIsRefusedAfterItsFailuresWithABackoffThatDoubles) {
  AuthThrottle throttle;
  int64_t now = 1'000'000;
  int64_t retry = 0;
  for (uint32_t i = 1; i < AuthThrottle::kFailuresBeforeBackoff; ++i) {
    ASSERT_TRUE(throttle.Allowed("10.0.0.1", now, &retry)) << i;
    throttle.RecordFailure("10.0.0.1", now);
  }
  throttle.RecordFailure("10.0.0.1", now);
  EXPECT_FALSE(throttle.Allowed("10.0.0.1", now, &retry));
  EXPECT_EQ(retry, AuthThrottle::kFirstBackoffMs);
  EXPECT_TRUE(throttle.Allowed("10.0.0.2", now, &retry)) << "another address is not refused";
  now += AuthThrottle::kFirstBackoffMs;
  EXPECT_TRUE(throttle.Allowed("10.0.0.1", now, &retry));
  throttle.RecordFailure("10.0.0.1", now);
  EXPECT_FALSE(throttle.Allowed("10.0.0.1", now, &retry));
  EXPECT_EQ(retry, 2 * AuthThrottle::kFirstBackoffMs);
  for (int i = 0; i < 20; ++i) {
    now += AuthThrottle::kMaxBackoffMs;
    throttle.RecordFailure("10.0.0.1", now);
  }
  ASSERT_FALSE(throttle.Allowed("10.0.0.1", now, &retry));
  EXPECT_EQ(retry, AuthThrottle::kMaxBackoffMs) << "the backoff stops growing at its cap";
  throttle.RecordSuccess("10.0.0.1");
  EXPECT_TRUE(throttle.Allowed("10.0.0.1", now, &retry));
  EXPECT_EQ(throttle.failures(), AuthThrottle::kFailuresBeforeBackoff + 21);
  EXPECT_EQ(throttle.refused(), 3u);
}

TEST(AuthThrottle, AnAddressQuietForTenMinutesStartsAfresh) {
  AuthThrottle throttle;
  int64_t retry = 0;
  for (uint32_t i = 0; i < AuthThrottle::kFailuresBeforeBackoff - 1; ++i) {
    throttle.RecordFailure("::1", 0);
  }
  EXPECT_EQ(throttle.RecordFailure("::1", AuthThrottle::kForgetAfterMs + 1), 1u);
  EXPECT_TRUE(throttle.Allowed("::1", AuthThrottle::kForgetAfterMs + 1, &retry));
}

TEST(AuthThrottle, PeerAddressDropsThePortAndIpv6Brackets) {
  EXPECT_EQ(PeerAddress("127.0.0.1:6379"), "127.0.0.1");
  EXPECT_EQ(PeerAddress("[::1]:50000"), "::1");
  EXPECT_EQ(PeerAddress(""), "");
}

TEST(AuthThrottle, AConnectionIsClosedAfterTenWrongPasswordsInARow) {
  ServerConfig config;
  config.requirepass = "right";
  auto server = MakeServer(config);
  Session s(server.get());
  s.client().authenticated = false;
  for (uint32_t i = 1; i < AuthThrottle::kFailuresPerConnection; ++i) {
    EXPECT_EQ(s.Run({"AUTH", "wrong"}), Err(errors::kWrongPass)) << i;
    EXPECT_FALSE(s.client().close_after_reply) << i;
  }
  EXPECT_EQ(s.Run({"AUTH", "wrong"}), Err(errors::kWrongPass));
  EXPECT_TRUE(s.client().close_after_reply);
  Session t(server.get());
  t.client().authenticated = false;
  EXPECT_EQ(t.Run({"HELLO", "3", "AUTH", "default", "wrong"}), Err(errors::kWrongPass));
  EXPECT_EQ(t.Run({"AUTH", "right"}), kOk);
  EXPECT_EQ(t.client().auth_failures, 0u) << "a right password resets the count";
  std::string info = t.Run({"INFO", "stats"});
  EXPECT_NE(info.find("acl_access_denied_auth:11\r\n"), std::string::npos) << info;
}

}  // namespace
}  // namespace bloomgate::testing
