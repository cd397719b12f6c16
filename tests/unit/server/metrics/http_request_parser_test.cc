// server/metrics/http_request_parser: the request head of the metrics port.
#include <gtest/gtest.h>

#include <string>

#include "server/metrics/http_request_parser.h"

namespace bloomgate {
namespace {

constexpr std::string_view kScrape =
    "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9121\r\nUser-Agent: Prometheus/2.42.0\r\n"
    "Accept: text/plain;version=0.0.4\r\nAuthorization: Basic ZGVmYXVsdDpzM2NyZXQ=\r\n\r\n";

TEST(HttpRequestParser, AScrapeParses) {
  HttpRequest request;
  ASSERT_EQ(ParseHttpRequest(kScrape, &request), HttpParse::kGood);
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.target, "/metrics");
  EXPECT_EQ(request.version, "HTTP/1.1");
  EXPECT_EQ(request.authorization, "Basic ZGVmYXVsdDpzM2NyZXQ=");
}

TEST(HttpRequestParser, EveryPrefixNeedsMore) {
  for (size_t i = 0; i < kScrape.size(); ++i) {
    HttpRequest request;
    EXPECT_EQ(ParseHttpRequest(kScrape.substr(0, i), &request), HttpParse::kNeedMore) << i;
  }
}

TEST(HttpRequestParser, BareLineFeedsAreAccepted) {
  HttpRequest request;
  ASSERT_EQ(ParseHttpRequest("GET /metrics?x=1 HTTP/1.0\nhost: a\n\n", &request),
            HttpParse::kGood);
  EXPECT_EQ(HttpPath(request.target), "/metrics");
  EXPECT_FALSE(request.authorization.has_value());
}

TEST(HttpRequestParser, MalformedHeadsAreBad) {
  for (std::string_view bad : {
           "GET /metrics\r\n\r\n",                       // no version
           "GET /metrics HTTP/2\r\n\r\n",                // not HTTP/1.x
           "GET  /metrics HTTP/1.1\r\n\r\n",             // two spaces
           "GET metrics HTTP/1.1\r\n\r\n",               // not origin-form
           "G(T /metrics HTTP/1.1\r\n\r\n",              // not a token
           "GET /metrics HTTP/1.1\r\nHost a\r\n\r\n",    // no colon
           "GET /metrics HTTP/1.1\r\nHost : a\r\n\r\n",  // space before the colon
           "GET /metrics HTTP/1.1\r\nAuthorization: a\r\nauthorization: b\r\n\r\n",
       }) {
    HttpRequest request;
    EXPECT_EQ(ParseHttpRequest(bad, &request), HttpParse::kBad) << bad;
  }
}

TEST(HttpRequestParser, AHeadPastTheLimitIsTooLarge) {
  std::string head = "GET /metrics HTTP/1.1\r\nX: " + std::string(kMaxHttpHeadBytes, 'a');
  HttpRequest request;
  EXPECT_EQ(ParseHttpRequest(head, &request), HttpParse::kTooLarge);
  EXPECT_EQ(ParseHttpRequest(head + "\r\n\r\n", &request), HttpParse::kTooLarge);
  // Just under it: fine.
  std::string fits = "GET /metrics HTTP/1.1\r\nX: ";
  fits += std::string(kMaxHttpHeadBytes - fits.size() - 4, 'a') + "\r\n\r\n";
  ASSERT_EQ(fits.size(), kMaxHttpHeadBytes);
  EXPECT_EQ(ParseHttpRequest(fits, &request), HttpParse::kGood);
}

}  // namespace
}  // namespace bloomgate
