// The request head of HTTP/1.1 (RFC 9112), as much as a metrics endpoint
// needs: the request line and the header fields, no body (a GET has none;
// any other method is answered 405 without reading one). A pure function of
// the bytes received so far, no I/O: the caller feeds the whole buffer again
// after each read and gets one of three answers, as in Asio's http/server
// example's request_parser.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace bloomgate {

// 8 KiB: the limit Apache and nginx put on one request header line; a
// scraper's whole head is ~200 bytes. A head not complete within it is
// answered 431 and the connection closed.
inline constexpr size_t kMaxHttpHeadBytes = 8 << 10;

struct HttpRequest {
  std::string method;
  std::string target;  // the request-target as sent ("/metrics?x=1")
  std::string version; // "HTTP/1.1"
  std::optional<std::string> authorization;  // the Authorization field's value
};

enum class HttpParse { kGood, kNeedMore, kBad, kTooLarge };

// Parses `input` (everything received so far). kGood fills *request.
HttpParse ParseHttpRequest(std::string_view input, HttpRequest* request);

// The path of a request-target, without its query ("/metrics?a=b" -> "/metrics").
std::string_view HttpPath(std::string_view target);

}  // namespace bloomgate
