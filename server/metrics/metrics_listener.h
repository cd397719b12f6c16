// The Prometheus endpoint's listener (metrics-port): accepts on the bind
// addresses, on one worker loop, and serves each socket one MetricsConnection.
// Scrapes come once every few seconds, so one loop is plenty, and the
// collector (one scrape at a time) and the connection set need no lock.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/metrics/metrics_collector.h"
#include "server/net/asio.h"

namespace bloomgate {

class MetricsConnection;
class ServerContext;

class MetricsListener {
 public:
  // Scrapers served at once at most; more are closed at accept. Prometheus
  // keeps one scrape in flight per target.
  static constexpr size_t kMaxConnections = 64;

  MetricsListener(ServerContext& server, asio::io_context& loop,
                  std::vector<std::unique_ptr<tcp::acceptor>> acceptors);
  void Start();
  // On the listener's loop: closes the acceptors and every connection.
  void Stop();

 private:
  void DoAccept(tcp::acceptor& acceptor);

  ServerContext& server_;
  asio::io_context& loop_;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors_;
  MetricsCollector collector_;
  std::unordered_map<MetricsConnection*, std::weak_ptr<MetricsConnection>> connections_;
  bool stopped_ = false;
};

}  // namespace bloomgate
