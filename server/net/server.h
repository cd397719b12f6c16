// The server: listening sockets, the worker pool, signals, the expiry sweep
// and graceful stop.
//
// Acceptors run on worker 0 and hand each new socket to the next worker
// round-robin. SIGINT, SIGTERM and SHUTDOWN all lead to Stop(): close the
// acceptors, let every connection finish the batch it is executing and flush
// its replies, then let the loops drain and return. A stop that does not
// finish within kStopGraceMs (a client that never reads its replies) is
// forced.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/context/server_context.h"
#include "server/net/asio.h"
#include "server/net/connection_manager.h"
#include "server/net/io_context_pool.h"

namespace bloomgate {

class Server {
 public:
  static constexpr int64_t kStopGraceMs = 5000;

  Server(ServerContext& context, size_t threads);

  // Binds every configured address; false with *error on failure.
  bool Listen(const std::vector<std::string>& addresses, uint16_t port, std::string* error);
  // The port actually bound (differs from the configured one for port 0).
  uint16_t bound_port() const { return bound_port_; }
  // Starts serving on the worker threads and returns at once (start-up
  // loads the data after this, answering -LOADING meanwhile).
  void Start();
  // Blocks until Stop(), then stops gracefully; returns when every worker
  // has finished.
  void Wait();
  // Start() then Wait().
  void Run() {
    Start();
    Wait();
  }
  // Thread-safe and idempotent; also interrupts a start-up load.
  void Stop();

 private:
  void DoAccept(tcp::acceptor& acceptor);
  void ScheduleHousekeeping();
  void StopOnMainLoop();

  ServerContext& context_;
  IoContextPool pool_;
  std::vector<std::unique_ptr<ConnectionManager>> managers_;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors_;
  asio::signal_set signals_;
  asio::steady_timer housekeeping_;
  uint16_t bound_port_ = 0;
  // Set on the main loop when the stop begins; accept and timer handlers
  // that were already queued check it instead of re-arming.
  std::atomic<bool> stopping_{false};

  std::mutex stop_mutex_;
  std::condition_variable stop_requested_cv_;
  bool stop_requested_ = false;
};

}  // namespace bloomgate
