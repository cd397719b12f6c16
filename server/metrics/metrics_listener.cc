#include "server/metrics/metrics_listener.h"

#include "server/metrics/metrics_connection.h"

namespace bloomgate {

MetricsListener::MetricsListener(ServerContext& server, asio::io_context& loop,
                                 std::vector<std::unique_ptr<tcp::acceptor>> acceptors)
    : server_(server), loop_(loop), acceptors_(std::move(acceptors)), collector_(server) {}

void MetricsListener::Start() {
  for (auto& acceptor : acceptors_) DoAccept(*acceptor);
}

void MetricsListener::DoAccept(tcp::acceptor& acceptor) {
  acceptor.async_accept(loop_, [this, &acceptor](const boost::system::error_code& ec,
                                                 tcp::socket socket) {
    if (stopped_ || !acceptor.is_open()) return;
    if (!ec && connections_.size() < kMaxConnections) {
      auto connection = std::make_shared<MetricsConnection>(
          std::move(socket), server_, collector_,
          [this](MetricsConnection* closed) { connections_.erase(closed); });
      connections_.emplace(connection.get(), connection);
      connection->Start();
    }
    if (!ec || ec == asio::error::connection_aborted) {
      DoAccept(acceptor);
      return;
    }
    // Out of descriptors (EMFILE, ENFILE) or another lasting error: try again
    // in 100 ms instead of failing in a tight loop.
    auto backoff = std::make_shared<asio::steady_timer>(loop_, std::chrono::milliseconds(100));
    backoff->async_wait([this, &acceptor, backoff](const boost::system::error_code&) {
      if (!stopped_ && acceptor.is_open()) DoAccept(acceptor);
    });
  });
}

void MetricsListener::Stop() {
  stopped_ = true;
  boost::system::error_code ignored;
  for (auto& acceptor : acceptors_) acceptor->close(ignored);
  // Stop() erases from the map through on_close: walk a copy.
  std::vector<std::shared_ptr<MetricsConnection>> live;
  for (auto& [raw, weak] : connections_) {
    if (auto connection = weak.lock()) live.push_back(std::move(connection));
  }
  for (auto& connection : live) connection->Stop();
  connections_.clear();
}

}  // namespace bloomgate
