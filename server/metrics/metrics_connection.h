// One HTTP/1.1 exchange on the metrics port: read one request head (at most
// kMaxHttpHeadBytes, within kReadDeadlineMs), answer it, close
// (Connection: close). Lives on its listener's loop; its handlers hold
// shared_from_this(), and operation_aborted means the listener is stopping.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "server/metrics/http_request_parser.h"
#include "server/net/asio.h"

namespace bloomgate {

class MetricsCollector;
class ServerContext;

// 5 s: a scraper sends its request at once (~200 bytes); Prometheus's own
// scrape timeout is 10 s, so a slower client is not a scraper.
inline constexpr int64_t kReadDeadlineMs = 5000;

// The response to a request head, as bytes: status line, headers, body.
// Pure but for the collector and the access decision it calls.
std::string MetricsResponse(ServerContext& server, MetricsCollector& collector,
                            const tcp::endpoint& peer, const HttpRequest& request,
                            int64_t now_ms);
// A response with no page: 400, 404, 405, 431...
std::string HttpErrorResponse(int status, std::string_view extra_headers = {});

class MetricsConnection : public std::enable_shared_from_this<MetricsConnection> {
 public:
  MetricsConnection(tcp::socket socket, ServerContext& server, MetricsCollector& collector,
                    std::function<void(MetricsConnection*)> on_close);
  void Start();
  void Stop();

 private:
  void DoRead();
  void DoWrite();
  void Close();

  tcp::socket socket_;
  ServerContext& server_;
  MetricsCollector& collector_;
  std::function<void(MetricsConnection*)> on_close_;
  asio::steady_timer deadline_;
  tcp::endpoint peer_;
  std::string input_;
  std::array<char, 2048> chunk_{};
  std::string output_;
  bool closed_ = false;
};

}  // namespace bloomgate
