// The server: listening sockets, the worker pool, signals, the expiry sweep
// and graceful stop.
//
// Acceptors run on worker 0 and hand each new socket to the next worker
// round-robin. SIGINT, SIGTERM and SHUTDOWN all lead to Stop(): close the
// acceptors, let every connection finish the batch it is executing and flush
// its replies, then let the loops drain and return. A stop that does not
// finish within kStopGraceMs (a client that never reads its replies) is
// forced. SIGHUP is logged and ignored, as Redis ignores it: a closed
// terminal or a service manager's reload must not end the server unsaved.
//
// Out of file descriptors (EMFILE/ENFILE) an acceptor pauses for
// kAcceptRetryMs instead of retrying at once: the waiting connection stays
// in the backlog and makes the socket readable again, so an immediate retry
// spins (9 million log lines in 20 s were seen). Start-up sizes maxclients
// to the fd limit (AdjustOpenFilesLimit) so that this is rare.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "server/context/server_context.h"
#include "server/net/asio.h"
#include "server/net/connection_manager.h"
#include "server/net/io_context_pool.h"
#include "server/net/tls_context.h"
#include "server/net/uring_loop.h"

namespace bloomgate {

class Server {
 public:
  static constexpr int64_t kStopGraceMs = 5000;
  // TLS clients over maxclients answered at once at most: each holds ~83 KB
  // (bench/tls_bench.py --memory) for up to tls-handshake-timeout, so a
  // flood costs at most ~5 MB; the rest are closed without the text.
  static constexpr size_t kMaxTlsRefusals = 64;
  // The pause after an accept that failed for want of descriptors or
  // memory: Redis retries on its next event-loop tick, Asio's examples on a
  // timer; 100 ms bounds the retries to 10 a second per listener while a
  // closed connection is picked up within a tenth of a second.
  static constexpr int64_t kAcceptRetryMs = 100;

  enum class Transport { kTcp, kTls };

  Server(ServerContext& context, size_t threads);

  // io-backend: with io_uring chosen, one ring per worker loop carries its
  // plain-TCP clients' receives and sends. Before Start(); the choice is
  // logged. False with *error when io_uring was asked for and is refused.
  bool SetUpIoBackend(const ServerConfig& config, std::string* error);

  // Builds the TLS context from `config` (before ListenTls); false with
  // *error if a file does not load. From then on CONFIG SET of a tls-*
  // setting rebuilds it (RuntimeConfig's applier).
  bool EnableTls(const ServerConfig& config, std::string* error);
  // Binds every address on `port` for one transport; false with *error on
  // failure. Port 0 binds a free port, the same one on every address.
  bool Listen(const std::vector<std::string>& addresses, uint16_t port, Transport transport,
              std::string* error);
  // The port bound for `transport` (0 if it has no listener).
  uint16_t bound_port(Transport transport) const {
    return transport == Transport::kTcp ? tcp_port_ : tls_port_.load();
  }
  // Starts serving on the worker threads, on every transport's listeners,
  // and returns at once (start-up loads the data after this, answering
  // -LOADING meanwhile).
  void Start();
  // Blocks until Stop(), then stops gracefully; returns when every worker
  // has finished.
  void Wait();
  // Start() then Wait(): serves until Stop().
  void Run() {
    Start();
    Wait();
  }
  // Thread-safe and idempotent; also interrupts a start-up load.
  void Stop();

  // Binds and listens on every address at `port` (0: a free one, the same
  // on all), on worker 0's loop; nothing is accepted yet. False with *error,
  // nothing left open. Logged as "listening on A:P<kind>" (kind "" for
  // RESP over TCP, " (TLS)", " (metrics)"). Public for listeners of other
  // protocols on the same loops (server/metrics/).
  bool Bind(const std::vector<std::string>& addresses, uint16_t port, std::string_view kind,
            std::vector<std::unique_ptr<tcp::acceptor>>* acceptors, uint16_t* bound,
            std::string* error);
  // The worker loops, for such listeners (a connection lives on one loop).
  asio::io_context& worker_context(size_t index) { return pool_.context(index); }
  // Called on worker 0 when the stop begins, beside the acceptors' close:
  // how such a listener closes its own. Added before Start().
  void AddStopHandler(std::function<void()> handler) {
    stop_handlers_.push_back(std::move(handler));
  }

 private:
  struct Listener {
    std::unique_ptr<tcp::acceptor> acceptor;
    Transport transport;
    // Re-arms DoAccept after a failure that an immediate retry would repeat.
    std::unique_ptr<asio::steady_timer> retry;
  };
  void DoAccept(Listener& listener);
  void AddListener(std::unique_ptr<tcp::acceptor> acceptor, Transport transport);
  // After an accept failed with `ec`: a pause for want of descriptors or
  // memory, else at once.
  void RetryAccept(Listener& listener, const boost::system::error_code& ec);
  void DoWaitSignal();
  // CONFIG SET tls-port: opens the TLS listener on the new port (building
  // the TLS context if the server started without one), then closes the old
  // one; 0 closes it. Open TLS connections stay. Called under RuntimeConfig's
  // lock; false with *why and nothing changed if the port cannot be bound.
  bool ChangeTlsPort(const ServerConfig& next, bool context_changed, std::string* why);
  // A connection for a socket accepted on `listener`, bound to `worker`.
  void Serve(Transport transport, tcp::socket socket, size_t worker);
  // A TLS client over maxclients: answered after its handshake if fewer
  // than kMaxTlsRefusals are in flight, else closed at once.
  void RefuseTls(tcp::socket socket, size_t worker);
  bool ReloadTls(const ServerConfig& next, const std::vector<std::string>& names,
                 std::string* param, std::string* why);
  void ScheduleHousekeeping();
  void StopOnMainLoop();

  ServerContext& context_;
  IoContextPool pool_;
  std::vector<std::unique_ptr<ConnectionManager>> managers_;
  // One per worker with io-backend io_uring, else empty. Declared after the
  // pool: each watches its ring on a worker's io_context.
  std::vector<std::unique_ptr<UringLoop>> uring_loops_;
  // A list: accept handlers hold references to their Listener. Listeners
  // closed by ChangeTlsPort stay (closed) until the server ends: their last
  // accept handler still looks at them (a few hundred bytes per change).
  // Changed on worker 0 only, where the acceptors run.
  std::list<Listener> listeners_;
  // The context new TLS connections take; swapped on reload.
  TlsContextHolder tls_;
  bool tls_enabled_ = false;
  asio::signal_set signals_;
  asio::steady_timer housekeeping_;
  uint16_t tcp_port_ = 0;
  std::atomic<uint16_t> tls_port_{0};
  // Set on the main loop when the stop begins; accept and timer handlers
  // that were already queued check it instead of re-arming.
  std::atomic<bool> stopping_{false};
  // TLS refusals between accept and close (RefuseTls).
  std::atomic<size_t> tls_refusals_{0};

  std::vector<std::function<void()>> stop_handlers_;

  std::mutex stop_mutex_;
  std::condition_variable stop_requested_cv_;
  bool stop_requested_ = false;
};

// The file descriptors a server needs besides one per client, as Redis
// counts them: CONFIG_MIN_RESERVED_FDS (32: the log, snapshot and
// append-only files, a replica's or a tool's extra sockets) plus this
// server's listening sockets and its event loops' own descriptors.
size_t ReservedFileDescriptors(const ServerConfig& config, size_t threads);

// Redis's adjustOpenFilesLimit: RLIMIT_NOFILE must hold maxclients plus
// `reserved`. A soft limit below that is raised toward the hard one; if even
// the best limit the system grants is short, config->maxclients is lowered
// to fit and *warning says so (one line, empty otherwise), and *notice
// reports a raised limit. False with *warning when not even one client fits
// (Redis exits then too).
bool AdjustOpenFilesLimit(ServerConfig* config, size_t reserved, std::string* warning,
                          std::string* notice);

}  // namespace bloomgate
