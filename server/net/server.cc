#include "server/net/server.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "config/bind_address.h"
#include "server/base/log_limiter.h"
#include "server/commands/errors.h"
#include "server/net/admission.h"
#include "server/net/connection.h"
#include "server/net/io_backend.h"

namespace bloomgate {
namespace {

// Expired keys are removed lazily on access and by this sweep; 100 ms (Redis's
// hz 10) with at most 2,000 keys a round bounds the work per tick.
constexpr auto kHousekeepingInterval = std::chrono::milliseconds(100);
constexpr size_t kExpireKeysPerRound = 2000;

LogLimiter refused_client_log(/*interval_ms=*/1000);
// One line a second at most while accepts fail: out of descriptors, every
// retry fails the same way.
LogLimiter accept_failure_log(/*interval_ms=*/1000);
LogLimiter sighup_log(/*interval_ms=*/1000);

// Redis's CONFIG_MIN_RESERVED_FDS.
constexpr size_t kMinReservedFds = 32;
// Each io_context's epoll reactor holds an epoll descriptor, an eventfd
// (its interrupter) and a timerfd: 3 per worker (ls /proc/PID/fd); and its
// ring unless io-backend is epoll (auto may set one up).
constexpr size_t kFdsPerWorker = 3;

// Failures that the next accept would repeat at once: the process or the
// system is out of descriptors, or the kernel out of socket memory.
bool RetryingSoonerFailsAgain(const boost::system::error_code& ec) {
  if (ec.category() != boost::system::system_category()) return false;
  const int value = ec.value();
  return value == EMFILE || value == ENFILE || value == ENOBUFS || value == ENOMEM;
}

// Answers a plain-TCP client that is refused before it gets a connection,
// with a short blocking write on its fresh socket (the text fits the send
// buffer), and closes it. (A TLS client reads its text after its handshake:
// Server::RefuseTls.)
void Refuse(tcp::socket& socket, std::string_view text) {
  boost::system::error_code ignored;
  std::string reply = "-" + std::string(text) + "\r\n";
  asio::write(socket, asio::buffer(reply), ignored);
  socket.close(ignored);
}

// Holds one of Server::kMaxTlsRefusals until the refused connection closes.
struct TlsRefusalSlot {
  explicit TlsRefusalSlot(std::atomic<size_t>* count) : count(count) {}
  ~TlsRefusalSlot() { count->fetch_sub(1, std::memory_order_relaxed); }
  std::atomic<size_t>* count;
};

// The tls-* settings the context is built from; setting any of them with
// CONFIG SET reloads it, even to the same value (that is how a renewed
// certificate at the same path is picked up).
bool BuildsTlsContext(std::string_view name) {
  return name.starts_with("tls-") && name != "tls-port" && name != "tls-handshake-timeout";
}

}  // namespace

Server::Server(ServerContext& context, size_t threads)
    : context_(context),
      pool_(threads),
      signals_(pool_.context(0), SIGINT, SIGTERM, SIGHUP),
      housekeeping_(pool_.context(0)) {
  for (size_t i = 0; i < pool_.size(); ++i) {
    managers_.push_back(std::make_unique<ConnectionManager>(context_));
  }
  context_.request_shutdown = [this] { Stop(); };
  context_.config_applier = [this](const ServerConfig& next,
                                   const std::vector<std::string>& names, std::string* param,
                                   std::string* why) {
    return ReloadTls(next, names, param, why);
  };
}

bool Server::SetUpIoBackend(const ServerConfig& config, std::string* error) {
  const IoBackendChoice choice = ChooseIoBackend(config.io_backend, ProbeIoUring);
  if (!choice.ok) {
    *error = choice.message;
    return false;
  }
  if (choice.io_uring) {
    for (size_t i = 0; i < pool_.size(); ++i) {
      std::unique_ptr<UringLoop> loop = UringLoop::Create(pool_.context(i), error);
      if (!loop) {
        uring_loops_.clear();
        return false;
      }
      uring_loops_.push_back(std::move(loop));
    }
  }
  spdlog::info("{}", choice.message);
  return true;
}

bool Server::EnableTls(const ServerConfig& config, std::string* error) {
  std::shared_ptr<ssl::context> context = BuildTlsContext(config, error);
  if (!context) return false;
  tls_.Install(std::move(context));
  tls_enabled_ = true;
  return true;
}

bool Server::ReloadTls(const ServerConfig& next, const std::vector<std::string>& names,
                       std::string* param, std::string* why) {
  auto it = std::find_if(names.begin(), names.end(), BuildsTlsContext);
  if (std::find(names.begin(), names.end(), "tls-port") != names.end() &&
      next.tls_port != tls_port_.load()) {
    if (!ChangeTlsPort(next, it != names.end(), why)) {
      *param = "tls-port";
      return false;
    }
    return true;  // a context it needed was built from `next`
  }
  // As in Redis, with no TLS listener the files are only stored; they are
  // loaded, and must be valid, when a tls-port is set.
  if (!tls_enabled_) return true;
  if (it == names.end()) return true;
  std::string error;
  std::shared_ptr<ssl::context> context = BuildTlsContext(next, &error);
  if (!context) {
    spdlog::warn("TLS configuration not changed: {}", error);
    *param = *it;
    *why = "Unable to update TLS configuration: " + error;
    return false;
  }
  tls_.Install(std::move(context));
  spdlog::info("TLS configuration reloaded: new connections use {}", next.tls_cert_file);
  return true;
}

bool Server::ChangeTlsPort(const ServerConfig& next, bool context_changed, std::string* why) {
  if (next.tls_port == 0 && next.port == 0) {
    *why = "port is 0: closing the TLS listener would leave no listener";
    return false;
  }
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  uint16_t bound = 0;
  std::shared_ptr<ssl::context> context;
  if (next.tls_port != 0) {
    std::string error;
    if (!tls_enabled_ || context_changed) {
      context = BuildTlsContext(next, &error);
      if (!context) {
        *why = "Unable to update TLS configuration: " + error;
        return false;
      }
    }
    if (!Bind(next.bind, next.tls_port, " (TLS)", &acceptors, &bound, &error)) {
      spdlog::warn("tls-port not changed: {}", error);
      *why = "Unable to listen on this port: " + error;
      return false;
    }
  }
  if (context) {
    tls_.Install(std::move(context));
    tls_enabled_ = true;
  }
  const uint16_t old_port = tls_port_.exchange(bound);
  context_.tls_port.store(bound);
  spdlog::info("tls-port changed from {} to {}", old_port, bound);
  // The acceptors run on worker 0: the swap happens there. New clients
  // wait in the new socket's backlog meanwhile.
  auto opened = std::make_shared<std::vector<std::unique_ptr<tcp::acceptor>>>(std::move(acceptors));
  asio::post(pool_.context(0), [this, opened] {
    boost::system::error_code ignored;
    for (Listener& listener : listeners_) {
      if (listener.transport == Transport::kTls) listener.acceptor->close(ignored);
    }
    for (auto& acceptor : *opened) {
      if (stopping_.load(std::memory_order_acquire)) {
        acceptor->close(ignored);
        continue;
      }
      AddListener(std::move(acceptor), Transport::kTls);
      DoAccept(listeners_.back());
    }
  });
  return true;
}

bool Server::Bind(const std::vector<std::string>& addresses, uint16_t port, std::string_view kind,
                  std::vector<std::unique_ptr<tcp::acceptor>>* acceptors, uint16_t* bound,
                  std::string* error) {
  uint16_t bound_port = 0;
  // The bind words as redis.conf takes them (config/bind_address.h).
  std::vector<BindEntry> entries;
  for (const std::string& word : addresses) {
    std::optional<std::vector<BindEntry>> expanded = ExpandBindAddress(word);
    if (!expanded) {
      *error = "invalid bind address '" + word + "'";
      return false;
    }
    entries.insert(entries.end(), expanded->begin(), expanded->end());
  }
  for (const BindEntry& entry : entries) {
    const std::string& text = entry.address;
    boost::system::error_code ec;
    asio::ip::address address = asio::ip::make_address(text, ec);
    if (ec) {
      *error = "invalid bind address '" + text + "'";
      return false;
    }
    auto acceptor = std::make_unique<tcp::acceptor>(pool_.context(0));
    tcp::endpoint endpoint(address, bound_port != 0 ? bound_port : port);
    acceptor->open(endpoint.protocol(), ec);
    if (!ec) acceptor->set_option(tcp::acceptor::reuse_address(true), ec);
    // Keep "::" from also claiming IPv4, so "0.0.0.0 ::" can both be bound.
    if (!ec && address.is_v6()) acceptor->set_option(asio::ip::v6_only(true), ec);
    if (!ec) acceptor->bind(endpoint, ec);
    // An optional address ("-::1") the host does not have, or whose family
    // it lacks, is skipped, as Redis skips it; any other failure is one.
    if (entry.optional && (ec == asio::error::address_family_not_supported ||
                           ec == boost::system::errc::address_not_available)) {
      spdlog::info("not listening on {}: {} (an optional bind address)", text, ec.message());
      continue;
    }
    if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      *error = "cannot listen on " + text + ":" + std::to_string(endpoint.port()) + ": " +
               ec.message();
      return false;
    }
    bound_port = acceptor->local_endpoint().port();
    spdlog::info("listening on {}:{}{}", text, bound_port, kind);
    acceptors->push_back(std::move(acceptor));
  }
  if (acceptors->empty()) {
    *error = "no bind address could be listened on (each was optional and unavailable)";
    return false;
  }
  *bound = bound_port;
  return true;
}

bool Server::Listen(const std::vector<std::string>& addresses, uint16_t port,
                    Transport transport, std::string* error) {
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  uint16_t bound = 0;
  if (!Bind(addresses, port, transport == Transport::kTcp ? "" : " (TLS)", &acceptors, &bound,
            error)) {
    return false;
  }
  for (auto& acceptor : acceptors) AddListener(std::move(acceptor), transport);
  if (transport == Transport::kTcp) {
    tcp_port_ = bound;
  } else {
    tls_port_.store(bound);
  }
  return true;
}

void Server::DoAccept(Listener& listener) {
  size_t worker = pool_.NextIndex();
  tcp::acceptor& acceptor = *listener.acceptor;
  const Transport transport = listener.transport;
  acceptor.async_accept(
      pool_.context(worker),
      [this, &listener, &acceptor, transport, worker](const boost::system::error_code& ec,
                                                      tcp::socket socket) {
        if (stopping_.load(std::memory_order_acquire) || !acceptor.is_open()) return;
        if (!ec) {
          ServerConfig config = context_.config.Get();
          boost::system::error_code peer_error;
          const tcp::endpoint peer = socket.remote_endpoint(peer_error);
          // TLS clients are judged after their handshake (connection.cc), so
          // that they can read the -DENIED text.
          if (transport == Transport::kTcp && !peer_error &&
              ProtectedModeRefuses(config, context_.acl.DefaultUserNoPass(), peer)) {
            Refuse(socket, errors::kProtectedMode);
          } else if (context_.clients.count() >= config.maxclients) {
            context_.stats.rejected_connections.fetch_add(1, std::memory_order_relaxed);
            uint64_t suppressed = 0;
            if (refused_client_log.Allow(NowMs(), &suppressed)) {
              spdlog::warn("refusing a client: maxclients ({}) reached ({} similar suppressed)",
                           config.maxclients, suppressed);
            }
            if (transport == Transport::kTcp) {
              Refuse(socket, errors::kMaxClients);
            } else {
              RefuseTls(std::move(socket), worker);
            }
          } else {
            asio::post(pool_.context(worker),
                       [this, transport, worker, socket = std::move(socket)]() mutable {
                         // StopAll for this worker is posted after stopping_
                         // is set, so a connection added here either is seen
                         // by StopAll or sees the flag.
                         if (stopping_.load(std::memory_order_acquire)) return;
                         Serve(transport, std::move(socket), worker);
                       });
          }
        } else {
          RetryAccept(listener, ec);
          return;
        }
        DoAccept(listener);
      });
}

void Server::AddListener(std::unique_ptr<tcp::acceptor> acceptor, Transport transport) {
  listeners_.push_back({std::move(acceptor), transport,
                        std::make_unique<asio::steady_timer>(pool_.context(0))});
}

void Server::RetryAccept(Listener& listener, const boost::system::error_code& ec) {
  const bool pause = RetryingSoonerFailsAgain(ec);
  uint64_t suppressed = 0;
  if (accept_failure_log.Allow(NowMs(), &suppressed)) {
    spdlog::warn("accept failed: {}{} ({} similar suppressed; clients connected: {}, "
                 "maxclients {})",
                 ec.message(),
                 pause ? "; accepting again every " + std::to_string(kAcceptRetryMs) +
                             " ms until it succeeds (raise 'ulimit -n' or lower maxclients)"
                       : std::string(),
                 suppressed, context_.clients.count(), context_.config.Get().maxclients);
  }
  if (!pause) {
    DoAccept(listener);
    return;
  }
  listener.retry->expires_after(std::chrono::milliseconds(kAcceptRetryMs));
  listener.retry->async_wait([this, &listener](const boost::system::error_code& wait_error) {
    if (wait_error || stopping_.load(std::memory_order_acquire) ||
        !listener.acceptor->is_open()) {
      return;
    }
    DoAccept(listener);
  });
}

void Server::Serve(Transport transport, tcp::socket socket, size_t worker) {
  ConnectionManager& manager = *managers_[worker];
  if (transport == Transport::kTcp) {
    manager.Add(MakeTcpConnection(std::move(socket), context_, manager, worker,
                                  uring_loops_.empty() ? nullptr : uring_loops_[worker].get()));
  } else {
    manager.Add(MakeTlsConnection(std::move(socket), tls_.current(), context_, manager, worker));
  }
}

void Server::RefuseTls(tcp::socket socket, size_t worker) {
  boost::system::error_code ignored;
  if (tls_refusals_.fetch_add(1, std::memory_order_relaxed) >= kMaxTlsRefusals) {
    tls_refusals_.fetch_sub(1, std::memory_order_relaxed);
    socket.close(ignored);
    return;
  }
  auto slot = std::make_shared<TlsRefusalSlot>(&tls_refusals_);
  asio::post(pool_.context(worker), [this, worker, slot = std::move(slot),
                                     socket = std::move(socket)]() mutable {
    if (stopping_.load(std::memory_order_acquire)) return;
    ConnectionManager& manager = *managers_[worker];
    manager.Add(MakeTlsRefusal(std::move(socket), tls_.current(),
                               std::string(errors::kMaxClients), std::move(slot), context_,
                               manager, worker));
  });
}

void Server::ScheduleHousekeeping() {
  housekeeping_.expires_after(kHousekeepingInterval);
  housekeeping_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_.load(std::memory_order_acquire)) return;
    int64_t now = NowMs();
    // While the data loads, expiry is the loader's (it judges keys at the
    // snapshot's cut, then sweeps), and a save would write a half-loaded
    // keyspace over the snapshot being read.
    if (!context_.durability->loading()) {
      context_.keyspace.SweepExpired(now, kExpireKeysPerRound, &context_.key_locks);
      context_.durability->Tick(now);
    }
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

void Server::DoWaitSignal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    if (signal == SIGHUP) {
      uint64_t suppressed = 0;
      if (sighup_log.Allow(NowMs(), &suppressed)) {
        spdlog::warn("received SIGHUP: ignored, the server goes on ({} similar suppressed); "
                     "SIGTERM stops it with its final save, CONFIG SET changes settings",
                     suppressed);
      }
      DoWaitSignal();
      return;
    }
    spdlog::info("received {}, shutting down", signal == SIGINT ? "SIGINT" : "SIGTERM");
    Stop();
  });
}

void Server::Start() {
  DoWaitSignal();
  for (Listener& listener : listeners_) DoAccept(listener);
  ScheduleHousekeeping();
  pool_.Start();
}

void Server::Wait() {
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
  context_.durability->CancelLoad();
  std::lock_guard lock(stop_mutex_);
  stop_requested_ = true;
  stop_requested_cv_.notify_all();
}

void Server::StopOnMainLoop() {
  stopping_.store(true, std::memory_order_release);
  boost::system::error_code ignored;
  for (Listener& listener : listeners_) {
    listener.acceptor->close(ignored);
    listener.retry->cancel();
  }
  for (const auto& handler : stop_handlers_) handler();
  signals_.cancel(ignored);
  housekeeping_.cancel();
  for (size_t i = 0; i < pool_.size(); ++i) {
    asio::post(pool_.context(i), [this, i] { managers_[i]->StopAll(); });
  }
  pool_.ReleaseWork();
}

size_t ReservedFileDescriptors(const ServerConfig& config, size_t threads) {
  const size_t transports = (config.port != 0 ? 1 : 0) + (config.tls_port != 0 ? 1 : 0);
  const size_t ring = config.io_backend == ServerConfig::IoBackend::kEpoll ? 0 : 1;
  return kMinReservedFds + transports * config.bind.size() + (kFdsPerWorker + ring) * threads;
}

bool AdjustOpenFilesLimit(ServerConfig* config, size_t reserved, std::string* warning,
                          std::string* notice) {
  const rlim_t wanted = static_cast<rlim_t>(config->maxclients) + reserved;
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    // Redis assumes 1024 then.
    const uint32_t old_maxclients = config->maxclients;
    config->maxclients = static_cast<uint32_t>(
        std::min<size_t>(config->maxclients, 1024 > reserved ? 1024 - reserved : 1));
    if (config->maxclients != old_maxclients) {
      *warning = "unable to obtain the current NOFILE limit (" + std::string(std::strerror(errno)) +
                 "), assuming 1024: maxclients lowered from " + std::to_string(old_maxclients) +
                 " to " + std::to_string(config->maxclients);
    }
    return true;
  }
  const rlim_t old_soft = limit.rlim_cur;
  if (old_soft == RLIM_INFINITY || old_soft >= wanted) return true;
  // The hard limit first: a privileged server (CAP_SYS_RESOURCE) may raise
  // it, as Redis does; otherwise the soft limit up to the hard one.
  int raise_error = 0;
  rlim_t best = old_soft;
  struct rlimit ask = {wanted, std::max(limit.rlim_max, wanted)};
  if (limit.rlim_max != RLIM_INFINITY && setrlimit(RLIMIT_NOFILE, &ask) == 0) {
    best = wanted;
  } else {
    if (limit.rlim_max != RLIM_INFINITY) raise_error = errno;
    ask = {limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max),
           limit.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &ask) == 0) {
      best = ask.rlim_cur;
    } else {
      raise_error = errno;
    }
  }
  if (best >= wanted) {
    *notice = "increased the maximum number of open files to " + std::to_string(wanted) +
              " (it was originally set to " + std::to_string(old_soft) + ")";
    return true;
  }
  const uint32_t old_maxclients = config->maxclients;
  if (best <= reserved) {
    *warning = "the current 'ulimit -n' of " + std::to_string(best) +
               " is not enough for the server to start: it needs " + std::to_string(reserved) +
               " file descriptors for itself and one per client; raise the open file limit "
               "to at least " + std::to_string(reserved + 1) + " (" +
               std::to_string(wanted) + " for maxclients " + std::to_string(old_maxclients) +
               ")";
    return false;
  }
  config->maxclients = static_cast<uint32_t>(best - reserved);
  *warning = "maxclients " + std::to_string(old_maxclients) + " needs " +
             std::to_string(wanted) + " open files (" + std::to_string(reserved) +
             " for the server itself), but the limit is " + std::to_string(best) +
             (raise_error != 0 ? " and cannot be raised (" +
                                     std::string(std::strerror(raise_error)) + ")"
                               : std::string()) +
             ": maxclients has been reduced to " + std::to_string(config->maxclients) +
             " to compensate for the low ulimit; raise 'ulimit -n' (LimitNOFILE= in a "
             "systemd unit) if you need more clients";
  return true;
}

}  // namespace bloomgate
