#include "server/net/server.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "server/commands/errors.h"
#include "server/net/connection.h"
#include "server/context/log_limiter.h"

namespace bloomgate {
namespace {

// Expired keys are removed lazily on access and by this sweep; 100 ms (Redis's
// hz 10) with at most 2,000 keys a round bounds the work per tick.
constexpr auto kHousekeepingInterval = std::chrono::milliseconds(100);
constexpr size_t kExpireKeysPerRound = 2000;

LogLimiter refused_client_log(/*interval_ms=*/1000);
LogLimiter protected_mode_log(/*interval_ms=*/1000);

// Redis's connIsLocal for TCP: exactly 127.0.0.1 and ::1 (and 127.0.0.1
// mapped into IPv6), not the rest of 127.0.0.0/8.
bool IsLocalClient(const asio::ip::address& address) {
  if (address.is_v6()) {
    const asio::ip::address_v6 v6 = address.to_v6();
    if (v6.is_v4_mapped()) {
      return asio::ip::make_address_v4(asio::ip::v4_mapped, v6).to_ulong() == 0x7f000001;
    }
    return v6.is_loopback();
  }
  return address.to_v4().to_ulong() == 0x7f000001;
}

// Answers a client that is refused before it gets a connection, with a short
// blocking write on its fresh socket (the text fits the send buffer), and
// closes it.
void Refuse(tcp::socket& socket, std::string_view text) {
  std::string reply = "-" + std::string(text) + "\r\n";
  boost::system::error_code ignored;
  asio::write(socket, asio::buffer(reply), ignored);
  socket.close(ignored);
}

}  // namespace

Server::Server(ServerContext& context, size_t threads)
    : context_(context),
      pool_(threads),
      signals_(pool_.context(0), SIGINT, SIGTERM),
      housekeeping_(pool_.context(0)) {
  for (size_t i = 0; i < pool_.size(); ++i) {
    managers_.push_back(std::make_unique<ConnectionManager>(context_));
  }
  context_.request_shutdown = [this] { Stop(); };
}

bool Server::Listen(const std::vector<std::string>& addresses, uint16_t port,
                    std::string* error) {
  for (const std::string& text : addresses) {
    boost::system::error_code ec;
    asio::ip::address address = asio::ip::make_address(text, ec);
    if (ec) {
      *error = "invalid bind address '" + text + "'";
      return false;
    }
    auto acceptor = std::make_unique<tcp::acceptor>(pool_.context(0));
    tcp::endpoint endpoint(address, bound_port_ != 0 ? bound_port_ : port);
    acceptor->open(endpoint.protocol(), ec);
    if (!ec) acceptor->set_option(tcp::acceptor::reuse_address(true), ec);
    // Keep "::" from also claiming IPv4, so "0.0.0.0 ::" can both be bound.
    if (!ec && address.is_v6()) acceptor->set_option(asio::ip::v6_only(true), ec);
    if (!ec) acceptor->bind(endpoint, ec);
    if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      *error = "cannot listen on " + text + ":" + std::to_string(endpoint.port()) + ": " +
               ec.message();
      return false;
    }
    bound_port_ = acceptor->local_endpoint().port();
    spdlog::info("listening on {}:{}", text, bound_port_);
    acceptors_.push_back(std::move(acceptor));
  }
  return true;
}

void Server::DoAccept(tcp::acceptor& acceptor) {
  size_t worker = pool_.NextIndex();
  acceptor.async_accept(
      pool_.context(worker),
      [this, &acceptor, worker](const boost::system::error_code& ec, tcp::socket socket) {
        if (stopping_.load(std::memory_order_acquire) || !acceptor.is_open()) return;
        if (!ec) {
          ServerConfig config = context_.config.Get();
          boost::system::error_code peer_error;
          const tcp::endpoint peer = socket.remote_endpoint(peer_error);
          if (config.protected_mode && config.requirepass.empty() && !peer_error &&
              !IsLocalClient(peer.address())) {
            uint64_t suppressed = 0;
            if (protected_mode_log.Allow(NowMs(), &suppressed)) {
              spdlog::warn("refusing a client from {} in protected mode: no password is set "
                           "({} similar suppressed)",
                           peer.address().to_string(), suppressed);
            }
            Refuse(socket, errors::kProtectedMode);
          } else if (context_.clients.count() >= config.maxclients) {
            context_.stats.rejected_connections.fetch_add(1, std::memory_order_relaxed);
            uint64_t suppressed = 0;
            if (refused_client_log.Allow(NowMs(), &suppressed)) {
              spdlog::warn("refusing a client: maxclients ({}) reached ({} similar suppressed)",
                           config.maxclients, suppressed);
            }
            Refuse(socket, errors::kMaxClients);
          } else {
            asio::post(pool_.context(worker),
                       [this, worker, socket = std::move(socket)]() mutable {
                         // StopAll for this worker is posted after stopping_
                         // is set, so a connection added here either is seen
                         // by StopAll or sees the flag.
                         if (stopping_.load(std::memory_order_acquire)) return;
                         managers_[worker]->Add(std::make_shared<Connection>(
                             std::move(socket), context_, *managers_[worker], worker));
                       });
          }
        } else {
          // Out of file descriptors and the like: keep accepting.
          spdlog::warn("accept failed: {}", ec.message());
        }
        DoAccept(acceptor);
      });
}

void Server::ScheduleHousekeeping() {
  housekeeping_.expires_after(kHousekeepingInterval);
  housekeeping_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_.load(std::memory_order_acquire)) return;
    int64_t now = NowMs();
    context_.keyspace.SweepExpired(now, kExpireKeysPerRound);
    context_.durability->Tick(now);
    context_.chunk_staging.DropIdle(now);
    // The 100 ms tick is Redis's sampling period for the instantaneous rates.
    context_.instantaneous.Sample(
        now, {context_.stats.Sum(&WorkerCounters::commands_processed),
              context_.stats.Sum(&WorkerCounters::net_input_bytes),
              context_.stats.Sum(&WorkerCounters::net_output_bytes)});
    context_.NoteMemoryPeak();
    int64_t timeout_ms = static_cast<int64_t>(context_.config.Get().timeout) * 1000;
    if (timeout_ms > 0) {
      for (size_t i = 0; i < pool_.size(); ++i) {
        asio::post(pool_.context(i),
                   [this, i, now, timeout_ms] { managers_[i]->StopIdle(now, timeout_ms); });
      }
    }
    ScheduleHousekeeping();
  });
}

void Server::Run() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    spdlog::info("received {}, shutting down", signal == SIGINT ? "SIGINT" : "SIGTERM");
    Stop();
  });
  for (auto& acceptor : acceptors_) DoAccept(*acceptor);
  ScheduleHousekeeping();
  pool_.Start();

  std::unique_lock lock(stop_mutex_);
  stop_requested_cv_.wait(lock, [this] { return stop_requested_; });
  lock.unlock();
  asio::post(pool_.context(0), [this] { StopOnMainLoop(); });

  // Wait for the loops to drain, then force them if a client holds us up.
  std::thread joiner([this] { pool_.Join(); });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kStopGraceMs);
  bool forced = false;
  while (context_.clients.count() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (context_.clients.count() > 0) {
    spdlog::warn("{} clients did not finish within {} ms; closing them",
                 context_.clients.count(), kStopGraceMs);
    pool_.ForceStop();
    forced = true;
  }
  joiner.join();
  spdlog::info("server stopped{}", forced ? " (forced)" : "");
}

void Server::Stop() {
  std::lock_guard lock(stop_mutex_);
  stop_requested_ = true;
  stop_requested_cv_.notify_all();
}

void Server::StopOnMainLoop() {
  stopping_.store(true, std::memory_order_release);
  boost::system::error_code ignored;
  for (auto& acceptor : acceptors_) acceptor->close(ignored);
  signals_.cancel(ignored);
  housekeeping_.cancel();
  for (size_t i = 0; i < pool_.size(); ++i) {
    asio::post(pool_.context(i), [this, i] { managers_[i]->StopAll(); });
  }
  pool_.ReleaseWork();
}

}  // namespace bloomgate
