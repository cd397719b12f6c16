#include "server/net/connection.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "server/base/log_limiter.h"
#include "server/clients/client_pause.h"
#include "server/clients/client_state.h"
#include "server/clients/monitor_feed.h"
#include "server/commands/command_dispatcher.h"
#include "server/commands/errors.h"
#include "server/commands/pubsub/pubsub_commands.h"
#include "server/context/server_context.h"
#include "server/net/admission.h"
#include "server/net/asio_ssl.h"
#include "server/net/connection_manager.h"
#include "server/net/input_buffer.h"
#include "server/net/uring_stream.h"
#include "server/resp/reply_builder.h"
#include "server/resp/resp_parser.h"
#include "server/replication/replication.h"

namespace bloomgate {
namespace {

// A read asks for at least this much free space; 16 KB holds a typical
// pipelined batch (redis-benchmark -P 16 of BF.ADD is ~1 KB).
constexpr size_t kMinReadSpace = 16 * 1024;
// Replies accumulated before the batch is flushed even if more complete
// commands are buffered; client-output-buffer-limit lowers it. While a batch
// is on the wire nothing more is read or run for the client, so its output
// memory is at most min(this, the limit) plus one reply.
constexpr size_t kOutputHighWater = 256 * 1024;
// A replica's link sends at most this much per write: large enough that a
// full sync moves hundreds of MB/s, small enough that a slow replica holds
// back only its own sync thread.
constexpr size_t kLinkChunkBytes = size_t{1} << 20;
// Buffers that grew past this for one big request or reply are released
// when idle again.
constexpr size_t kShrinkAbove = 1024 * 1024;
// One read takes at most this much: the kernel's copy into the buffer
// writes (and first faults in) what it reads, and a socket may hold several
// MiB, so a big argument arrives in steps other clients of the loop can run
// between.
constexpr size_t kMaxReadBytes = 1024 * 1024;
// Unconsumed input a client may accumulate before it is disconnected
// (Redis's client-query-buffer-limit, 1 GB); raised to fit one maximal bulk
// when proto-max-bulk-len is larger.
constexpr uint64_t kQueryBufferLimit = 1ull << 30;
// What Redis allows a client that has not authenticated yet.
constexpr uint64_t kUnauthenticatedMaxArgs = 10;
constexpr uint64_t kUnauthenticatedMaxBulk = 16 * 1024;

// How long a TLS connection the server closes waits for the peer's answer
// to its close_notify. The alert itself goes out at once; the wait only lets
// a polite peer answer (one round trip: 1 s is three times an
// intercontinental RTT), and bounds what a peer that never answers holds:
// its socket and ~83 KB of TLS buffers, not a maxclients slot (the client is
// unregistered when the close begins).
constexpr auto kCloseNotifyWait = std::chrono::milliseconds(1000);
// How long a killed client's write in flight may take before it is dropped.
constexpr auto kKilledWriteWait = std::chrono::milliseconds(1000);

// How long a connection the server closes keeps reading, and dropping, what
// its peer still sends after the server's FIN. Closing a socket with unread
// input makes the kernel answer with a reset and discard what it had not yet
// transmitted, so a client pipelining past a QUIT, a CLIENT KILL or a
// shutdown could lose the tail of replies it was owed: the e2e test
// test_sigterm_during_a_continuous_pipeline_ends_on_a_whole_reply saw a
// reply cut in half after 17,668 replies. Reading until the peer's own FIN,
// or for this long, lets every queued byte go out first (a lingering close).
// One RTT is enough for a peer that reads; the bound is what a peer that
// never stops sending holds: its socket and a 4 KiB buffer, not a client
// slot, and a server shutdown waits for it at most this long.
constexpr auto kLingerWait = std::chrono::milliseconds(1000);
constexpr size_t kLingerReadBytes = 4096;

LogLimiter protocol_error_log(/*interval_ms=*/1000);
LogLimiter handshake_log(/*interval_ms=*/1000);
LogLimiter monitor_log(/*interval_ms=*/1000);

std::string EndpointText(const tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  std::string host = address.to_string();
  if (address.is_v6()) host = "[" + host + "]";
  return host + ":" + std::to_string(endpoint.port());
}


// The connection over one stream type: tcp::socket, UringStream (plain TCP
// through the worker's io_uring) or TlsStream. Everything after the
// handshake is the same code for all; the stream-specific parts are the
// `if constexpr` branches.
template <typename Stream>
class StreamConnection final : public Connection {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  static constexpr bool kUring = std::is_same_v<Stream, UringStream>;

  StreamConnection(tcp::socket socket, std::shared_ptr<ssl::context> tls_context,
                   ServerContext& server, ConnectionManager& manager, size_t worker_index,
                   std::string refusal = {}, std::shared_ptr<void> refusal_slot = nullptr,
                   UringLoop* uring = nullptr)
      : refusal_(std::move(refusal)),
        refusal_slot_(std::move(refusal_slot)),
        tls_context_(std::move(tls_context)),
        stream_(MakeStream(std::move(socket), tls_context_.get(), uring)),
        handshake_timer_(stream_.get_executor()),
        pause_timer_(stream_.get_executor()),
        shutdown_timer_(stream_.get_executor()),
        server_(server),
        manager_(manager),
        reply_(&out_) {
    client_.worker_index = worker_index;
    // Protocol errors are counted in INFO errorstats too; a refusal is not
    // (the plain port's is written before there is a connection).
    if (refusal_.empty()) reply_.set_error_observer(&server_.error_stats);
  }

  void Start() override;
  void Stop() override;
  void Kill() override;
  // Called on this connection's loop once the snapshot copy or the filter
  // its parked command waited for is made: runs that command again, and the
  // rest.
  void ResumeAfterCopy();
  // Called on this connection's loop when CLIENT PAUSE may have ended (its
  // end time passed, or CLIENT UNPAUSE): runs the held command again, which
  // parks once more if the pause was extended.
  void ResumeAfterPause(uint64_t generation);
  // Called on this connection's loop when its MonitorSink has lines or its
  // pub/sub inbox (client_.subscriber) has messages.
  void DrainInboxes();
  int64_t last_activity_ms() const override { return last_activity_ms_; }
  // A subscriber too: Redis's timeout spares pub/sub clients, which may
  // rightly send nothing for hours.
  bool idle_exempt() const override {
    return paused_ || monitor_sink_ != nullptr || client_.subscribed() ||
           client_.link_outbox != nullptr;
  }
  void ResumeAfterLogFlush(bool logged) override;
  asio::any_io_executor executor() override { return stream_.get_executor(); }

 private:
  static Stream MakeStream(tcp::socket socket, ssl::context* tls_context, UringLoop* uring) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *tls_context);
    } else if constexpr (kUring) {
      return Stream(std::move(socket), *uring);
    } else {
      return socket;
    }
  }
  tcp::socket& socket() {
    if constexpr (kTls) {
      return stream_.next_layer();
    } else if constexpr (kUring) {
      return stream_.socket();
    } else {
      return stream_;
    }
  }
  // Ends the read and the write in flight with operation_aborted.
  void CancelIo(boost::system::error_code& ec) {
    if constexpr (kUring) {
      stream_.cancel(ec);
    } else {
      socket().cancel(ec);
    }
  }

  void DoHandshake(uint32_t timeout_ms);
  void OnHandshake(const boost::system::error_code& ec);
  void DoRead();
  void DoWrite();
  void ProcessInput();
  // The command just parsed must wait for a snapshot copy (client_.parked_on)
  // or for a filter to be made (client_.making): stop here, input
  // unconsumed, until the copier or the maker calls back.
  void Park();
  // CLIENT PAUSE holds the command just parsed (its replies before it are
  // sent): stop here, input unconsumed, until the pause ends or UNPAUSE.
  // The socket is watched meanwhile, so a client that gives up and closes
  // is closed here too instead of holding its socket for the whole pause.
  void ParkForPause();
  void EndPause();
  // MONITOR started or RESET ended it (client_.monitor): (un)subscribe.
  void SyncMonitor();
  // After a batch: write its replies, or close, or read more.
  void SendOrContinue();
  void DrainForStop();
  // CLIENT LIST's flags b and c follow the connection's state.
  void SetBlocked(bool blocked);
  void NoteCloseAfterReply();
  // The client is done with: unregistered at once; the socket closed now,
  // or over TLS after a close_notify (SendCloseNotify).
  void Close();
  // TLS: sends close_notify and waits at most kCloseNotifyWait for the
  // peer's, then closes the socket.
  void SendCloseNotify();
  // Half-closes the socket (FIN after the queued replies), then reads and
  // drops input until the peer's FIN or kLingerWait, then closes it.
  void CloseSocket();
  void LingerRead();
  void UpdateParserLimits();

  // Not empty: a refused TLS client (MakeTlsRefusal) that reads this after
  // its handshake; its slot is released at Close.
  std::string refusal_;
  std::shared_ptr<void> refusal_slot_;
  // Declared before stream_, which is built over it.
  std::shared_ptr<ssl::context> tls_context_;  // null for plain TCP
  Stream stream_;
  asio::steady_timer handshake_timer_;
  asio::steady_timer pause_timer_;
  asio::steady_timer shutdown_timer_;
  bool handshaking_ = false;
  // TLS: the handshake succeeded and no read or write failed since, so a
  // close_notify can still be sent.
  bool session_open_ = false;
  // Close found a TLS read pending: its handler sends the close_notify (one
  // TLS operation reading the stream at a time).
  bool close_notify_after_read_ = false;
  bool handshake_timed_out_ = false;
  uint32_t handshake_timeout_ms_ = 0;
  ServerContext& server_;
  ConnectionManager& manager_;

  InputBuffer in_;
  std::unique_ptr<char[]> linger_buf_;  // kLingerReadBytes, from CloseSocket on
  RespParser parser_;
  std::vector<std::string_view> args_;
  bool parser_unauthenticated_ = false;

  std::string out_;      // replies being built
  std::string writing_;  // replies on the wire
  ReplyBuilder reply_;
  bool write_in_flight_ = false;
  bool awaiting_log_ = false;  // replies held until the log has the batch's writes
  bool parked_ = false;        // a command waits for a snapshot copy or a filter
  bool paused_ = false;        // a command waits for CLIENT PAUSE to end
  uint64_t pause_waiter_ = 0;  // its ClientPause::AddWaiter id (or AddAckWaiter's)
  bool waiting_for_acks_ = false;  // the held command is a WAIT
  // Told apart by the handlers of one pause's timer and socket watch, so a
  // late one from an earlier pause does nothing.
  uint64_t pause_generation_ = 0;
  // A monitor or a subscriber reads and writes at once (lines or messages
  // go out while it may send RESET): at most one of each in flight.
  bool read_in_flight_ = false;
  std::shared_ptr<MonitorSink> monitor_sink_;
  bool stopping_ = false;
  bool closed_ = false;
  int64_t last_activity_ms_ = 0;

  ClientState client_;
  uint64_t proto_max_bulk_len_ = 0;
};

template <typename Stream>
void StreamConnection<Stream>::Start() {
  boost::system::error_code ec;
  tcp::endpoint remote = socket().remote_endpoint(ec);
  tcp::endpoint local = socket().local_endpoint(ec);
  socket().set_option(tcp::no_delay(true), ec);
  last_activity_ms_ = NowMs();
  ServerConfig config = server_.config.Get();
  if (!refusal_.empty()) {
    // Not a client: no registration, no count, nothing to kill.
    DoHandshake(config.tls_handshake_timeout_ms);
    return;
  }
  client_.info = server_.clients.Register(EndpointText(remote), EndpointText(local),
                                          last_activity_ms_);
  // Every connection starts as the default user, authenticated at once if
  // that user is on and has nopass (Redis's rule).
  client_.acl_version = server_.acl.version();
  client_.user = server_.acl.Find("default");
  client_.authenticated = client_.user->enabled && client_.user->nopass;
  // ACL DELUSER and CLIENT KILL on another thread close this connection
  // through its loop. A kill of the client running CLIENT KILL closes it
  // after its reply.
  std::weak_ptr<Connection> weak = weak_from_this();
  auto executor = socket().get_executor();
  client_.info->set_close_hook([weak, executor] {
    asio::post(executor, [weak] {
      if (auto connection = weak.lock()) connection->Kill();
    });
  });
  // PUBLISH on any thread wakes this loop to take the subscriber's messages.
  client_.wake_subscriber = [weak, executor] {
    asio::post(executor, [weak] {
      if (auto connection = weak.lock()) {
        static_cast<StreamConnection*>(connection.get())->DrainInboxes();
      }
    });
  };
  proto_max_bulk_len_ = config.proto_max_bulk_len;
  UpdateParserLimits();
  if (!in_.MakeRoom(kMinReadSpace)) throw std::bad_alloc();
  Bump(server_.stats.worker(client_.worker_index).connections_received);
  if constexpr (kTls) {
    // Registered (and counted against maxclients) during the handshake, as
    // in Redis, so handshaking clients cannot exceed the limit unseen.
    DoHandshake(config.tls_handshake_timeout_ms);
  } else {
    if constexpr (kUring) stream_.Detach();
    DoRead();
  }
}

template <typename Stream>
void StreamConnection<Stream>::DoHandshake(uint32_t timeout_ms) {
  handshaking_ = true;
  handshake_timeout_ms_ = timeout_ms;
  auto self = shared_from_this();
  // A client that connects and sends nothing (or half a ClientHello) would
  // otherwise hold its socket, Asio's 4 x 17 KB of TLS buffers (server RSS per
  // idle TLS client: 82.7 KB, against 17.6 KB over TCP; bench/tls_bench.py
  // --memory) and a maxclients slot forever. Cancelling the socket ends the
  // handshake's pending read or write with operation_aborted.
  handshake_timer_.expires_after(std::chrono::milliseconds(timeout_ms));
  handshake_timer_.async_wait([this, self](const boost::system::error_code& ec) {
    if (ec || !handshaking_) return;
    handshake_timed_out_ = true;
    boost::system::error_code ignored;
    socket().cancel(ignored);
  });
  if constexpr (kTls) {
    stream_.async_handshake(ssl::stream_base::server,
                            [this, self](const boost::system::error_code& ec) { OnHandshake(ec); });
  }
}

template <typename Stream>
void StreamConnection<Stream>::OnHandshake(const boost::system::error_code& ec) {
  handshaking_ = false;
  handshake_timer_.cancel();
  if (ec) {
    // Plain text on the TLS port, an unknown CA, no certificate where one is
    // required, a protocol not allowed: the client is closed and no other
    // client notices.
    if (!stopping_) {
      uint64_t suppressed = 0;
      if (handshake_log.Allow(NowMs(), &suppressed)) {
        std::string reason = handshake_timed_out_
                                 ? "not finished within " +
                                       std::to_string(handshake_timeout_ms_) + " ms"
                                 : ec.message();
        boost::system::error_code peer_error;
        const tcp::endpoint peer = socket().remote_endpoint(peer_error);
        spdlog::warn("TLS handshake with {} failed: {} ({} similar suppressed)",
                     peer_error ? "?" : EndpointText(peer), reason, suppressed);
      }
    }
    Close();
    return;
  }
  session_open_ = true;
  if (stopping_) {
    Close();
    return;
  }
  last_activity_ms_ = NowMs();
  if (!refusal_.empty()) {
    reply_.Error(refusal_);
    client_.close_after_reply = true;
    DoWrite();
    return;
  }
  boost::system::error_code peer_error;
  const tcp::endpoint peer = socket().remote_endpoint(peer_error);
  if (!peer_error && ProtectedModeRefuses(server_.config.Get(), server_.acl.DefaultUserNoPass(), peer)) {
    // Answered over TLS, then closed, as the plain port answers at accept.
    reply_.Error(errors::kProtectedMode);
    client_.close_after_reply = true;
    DoWrite();
    return;
  }
  DoRead();
}

template <typename Stream>
void StreamConnection<Stream>::Kill() {
  if (closed_) return;
  if (paused_) {
    // The held command never ran and its earlier replies are out.
    Close();
    return;
  }
  if (write_in_flight_) {
    // Its write in flight finishes first and then it closes (under TLS with
    // a close_notify), as after QUIT. But that write may never finish (a
    // subscriber that stopped reading, its socket full): past
    // kKilledWriteWait its output is dropped, as Redis frees a killed client
    // with its output unsent. shutdown_timer_ is free until Close uses it,
    // which cancels this wait.
    client_.close_after_reply = true;
    NoteCloseAfterReply();
    auto self = shared_from_this();
    shutdown_timer_.expires_after(kKilledWriteWait);
    shutdown_timer_.async_wait([this, self](const boost::system::error_code& ec) {
      if (!ec && !closed_) Close();
    });
    return;
  }
  if (awaiting_log_ || parked_) {
    // Replies of the batch already run are sent first; then it closes. A
    // parked command never runs: ProcessInput stops at close_after_reply.
    client_.close_after_reply = true;
    NoteCloseAfterReply();
    return;
  }
  Close();
}

template <typename Stream>
void StreamConnection<Stream>::UpdateParserLimits() {
  bool unauthenticated = !client_.authenticated;
  RespLimits limits;
  limits.max_bulk_len = proto_max_bulk_len_;
  if (unauthenticated) {
    limits.unauthenticated = true;
    limits.max_multibulk_len = kUnauthenticatedMaxArgs;
    limits.max_bulk_len = kUnauthenticatedMaxBulk;
  }
  parser_.set_limits(limits);
  parser_unauthenticated_ = unauthenticated;
}

template <typename Stream>
void StreamConnection<Stream>::Stop() {
  if (stopping_ || closed_) return;
  stopping_ = true;
  boost::system::error_code ignored;
  if (paused_) {
    // Nothing is owed: the held command did not run.
    Close();
    return;
  }
  if (handshaking_) {
    // Nothing was asked yet, so nothing is owed: end the handshake now.
    socket().cancel(ignored);
    return;
  }
  // A connection waiting in a read is woken by cancelling it; its handler
  // then answers what the client already sent (DrainForStop). One that is
  // writing closes when the write completes.
  if (!write_in_flight_) CancelIo(ignored);
}

template <typename Stream>
void StreamConnection<Stream>::DrainForStop() {
  // Commands the client sent before the stop are answered: take whatever is
  // already in the socket without waiting for more.
  boost::system::error_code ec;
  socket().non_blocking(true, ec);
  while (!ec) {
    if (!in_.MakeRoom(kMinReadSpace)) break;
    // Over TLS this decrypts what is already buffered or readable, and
    // stops at would_block like the plain socket.
    size_t bytes = stream_.read_some(
        asio::buffer(in_.free_begin(), std::min(in_.free_size(), kMaxReadBytes)), ec);
    in_.Commit(bytes);
    if (in_.unread_size() > kQueryBufferLimit) break;
  }
  ProcessInput();
}

template <typename Stream>
void StreamConnection<Stream>::DoRead() {
  // A monitor's write completes into here while its read still waits.
  if (read_in_flight_) return;
  if (stopping_) {
    Close();
    return;
  }
  // A big buffer, idle again, is freed off the loop (munmap of a 256 MiB
  // argument's touched pages is ~20 ms).
  if (auto old = in_.ReleaseIfIdle(kShrinkAbove, kMinReadSpace)) {
    server_.lazy_freer.Free(std::move(old));
  }
  // The buffer grows with bytes that arrived, never with a size a client
  // merely claimed; a bulk's declared length (plus room for the next
  // header) only caps its last doubling. Unread input past Redis's
  // client-query-buffer-limit closes the client.
  if (in_.unread_size() > std::max(kQueryBufferLimit, proto_max_bulk_len_ + kMinReadSpace)) {
    uint64_t suppressed = 0;
    if (protocol_error_log.Allow(NowMs(), &suppressed)) {
      spdlog::warn("closing client {}: query buffer over {} bytes ({} similar suppressed)",
                   client_.info ? client_.info->addr : "?", in_.unread_size(), suppressed);
    }
    Close();
    return;
  }
  const uint64_t wanted = parser_.bytes_wanted();
  if (!in_.MakeRoom(kMinReadSpace, wanted == 0 ? 0 : wanted + kMinReadSpace)) {
    uint64_t suppressed = 0;
    if (protocol_error_log.Allow(NowMs(), &suppressed)) {
      spdlog::warn("closing client {}: no memory for {} more bytes of input ({} similar "
                   "suppressed)", client_.info ? client_.info->addr : "?",
                   in_.unread_size() + kMinReadSpace, suppressed);
    }
    Close();
    return;
  }
  auto self = shared_from_this();
  read_in_flight_ = true;
  stream_.async_read_some(
      asio::buffer(in_.free_begin(), std::min(in_.free_size(), kMaxReadBytes)),
      [this, self](const boost::system::error_code& ec, size_t bytes) {
        read_in_flight_ = false;
        if (closed_) {
          // Cancelled by Close (or it raced in with data, which nobody
          // asked for any more).
          if (close_notify_after_read_) {
            if (ec && ec != asio::error::operation_aborted) session_open_ = false;
            session_open_ ? SendCloseNotify() : CloseSocket();
          }
          return;
        }
        if (ec == asio::error::operation_aborted && stopping_ && !closed_) {
          DrainForStop();
          return;
        }
        if (ec) {
          // EOF or reset: the client is gone, not a server failure.
          session_open_ = false;
          Close();
          return;
        }
        in_.Commit(bytes);
        last_activity_ms_ = NowMs();
        if (client_.info) {
          client_.info->last_interaction_ms.store(last_activity_ms_, std::memory_order_relaxed);
        }
        Bump(server_.stats.worker(client_.worker_index).net_input_bytes, bytes);
        ProcessInput();
      });
}

template <typename Stream>
void StreamConnection<Stream>::ProcessInput() {
  // client-output-buffer-limit: once this many reply bytes are pending the
  // client's commands stop running (and it is not read) until the socket
  // has taken them. Read per batch, so CONFIG SET applies at once.
  const uint64_t high_water =
      std::min<uint64_t>(kOutputHighWater, server_.client_output_buffer_limit());
  while (!client_.close_after_reply && out_.size() < high_water) {
    std::string_view input = in_.unread();
    size_t consumed = 0;
    ParseStatus status = parser_.Parse(input, &args_, &consumed);
    if (status == ParseStatus::kNeedMore) break;
    if (status == ParseStatus::kError) {
      uint64_t suppressed = 0;
      if (protocol_error_log.Allow(NowMs(), &suppressed)) {
        spdlog::warn("closing client {} after a protocol error: {} ({} similar suppressed)",
                     client_.info ? client_.info->addr : "?", parser_.error(), suppressed);
      }
      reply_.Error(parser_.error());
      client_.close_after_reply = true;
      break;
    }
    reply_.set_resp3(client_.resp3);
    uint64_t errors_before = reply_.errors_written();
    const CommandOutcome outcome = DispatchCommand(server_, client_, args_, reply_);
    if (outcome == CommandOutcome::kParked) {
      // Nothing ran or replied; the command stays in the input buffer.
      Park();
      return;
    }
    if (outcome == CommandOutcome::kPaused) {
      // Nothing ran or replied. Replies of the batch so far go out first
      // (a read before a paused write is answered, as in Redis); the write
      // completes into ProcessInput, which dispatches this command again.
      if (out_.empty() && client_.journal.offset == 0) {
        ParkForPause();
        return;
      }
      break;
    }
    if (reply_.errors_written() != errors_before) {
      Bump(server_.stats.worker(client_.worker_index).error_replies,
           reply_.errors_written() - errors_before);
    }
    in_.Consume(consumed);
    // AUTH / HELLO AUTH raise the limits; RESET (or a deleted user) may
    // lower them again: they follow the authentication state both ways.
    if (parser_unauthenticated_ == client_.authenticated) UpdateParserLimits();
    if (client_.monitor != (monitor_sink_ != nullptr)) SyncMonitor();
    // HELLO may change the protocol of a subscribed client: its messages follow.
    if (client_.subscriber) client_.subscriber->set_resp3(client_.resp3);
  }
  if (client_.close_after_reply) NoteCloseAfterReply();
  if (client_.journal.offset != 0) {
    // The replies wait until the log holds the batch's writes. The manager
    // flushes once for every connection of this thread that is waiting (one
    // write, and with appendfsync always one fsync, per loop pass, as Redis
    // does in beforeSleep), then resumes each.
    awaiting_log_ = true;
    manager_.AwaitLogFlush(shared_from_this(), client_);
    return;
  }
  SendOrContinue();
}

template <typename Stream>
void StreamConnection<Stream>::Park() {
  parked_ = true;
  SetBlocked(true);
  auto self = std::static_pointer_cast<StreamConnection>(shared_from_this());
  auto executor = this->executor();
  // The copier and the maker call back on their own threads; the connection
  // resumes on its loop. Replies of earlier commands in the batch wait with
  // it: they go out in order, after the log flush of the whole batch.
  auto resume = [self, executor] {
    asio::post(executor, [self] { self->ResumeAfterCopy(); });
  };
  if (client_.parked_on != nullptr) {
    server_.snapshot_copier.CopyInBackground(std::move(client_.parked_on), std::move(resume));
    return;
  }
  FilterMaker* maker = CurrentFilterMaker();
  if (maker == nullptr || !maker->Make(client_.making, resume)) {
    // The maker stopped since the command asked (the server is shutting
    // down): built here, as with no maker at all.
    client_.making->Make();
    resume();
  }
}

template <typename Stream>
void StreamConnection<Stream>::ParkForPause() {
  paused_ = true;
  SetBlocked(true);
  const uint64_t generation = ++pause_generation_;
  auto self = std::static_pointer_cast<StreamConnection>(shared_from_this());
  std::weak_ptr<StreamConnection> weak = self;
  auto executor = this->executor();
  // UNPAUSE calls this on its own thread: post to this loop. A weak
  // reference: a connection closed meanwhile is simply gone.
  auto resume = [weak, executor, generation] {
    asio::post(executor, [weak, generation] {
      if (auto connection = weak.lock()) connection->ResumeAfterPause(generation);
    });
  };
  // A WAIT parks the same way: run again at each replica's ACK and at its
  // deadline (0: none).
  int64_t wait_deadline_ms = 0;
  waiting_for_acks_ =
      client_.info && server_.replication->Waiting(client_.info.get(), &wait_deadline_ms);
  pause_waiter_ = waiting_for_acks_ ? server_.replication->AddAckWaiter(resume)
                                    : server_.pause.AddWaiter(resume);
  // The next end as of now (the mode may soften then); a later PAUSE that
  // extends it parks the command again.
  // At most an hour at a time: PAUSE accepts ends near INT64_MAX ms, which
  // would overflow the timer's nanoseconds (and fire at once, every time).
  // Waking hourly to find the pause still on just parks again.
  constexpr int64_t kMaxPauseWaitMs = 3'600'000;
  const int64_t end_ms = !waiting_for_acks_        ? server_.pause.NextEndAfter(NowMs())
                         : wait_deadline_ms == 0 ? NowMs() + kMaxPauseWaitMs
                                                 : wait_deadline_ms;
  const int64_t wait_ms = std::clamp<int64_t>(end_ms - NowMs(), 0, kMaxPauseWaitMs);
  pause_timer_.expires_after(std::chrono::milliseconds(wait_ms));
  pause_timer_.async_wait([self, generation](const boost::system::error_code& ec) {
    if (!ec) self->ResumeAfterPause(generation);
  });
  // Readable while parked: more commands (left in the socket until the
  // pause ends) or the end of the stream (the client gave up: close now).
  // Peeked on the TCP socket, under TLS too: a closed peer reads as 0.
  socket().async_wait(tcp::socket::wait_read, [self, generation](
                                                  const boost::system::error_code& ec) {
    if (ec || !self->paused_ || self->pause_generation_ != generation) return;
    // Never a blocking peek on the loop: asio's receive() on a socket the
    // user has not set non-blocking polls until data comes when the
    // readiness it was woken for is gone, stalling every client of this loop
    // until the parked one sends something.
    char byte = 0;
    const ssize_t peeked =
        ::recv(self->socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (peeked <= 0) self->Close();
  });
}

template <typename Stream>
void StreamConnection<Stream>::EndPause() {
  paused_ = false;
  SetBlocked(false);
  ++pause_generation_;
  if (waiting_for_acks_) {
    server_.replication->RemoveAckWaiter(pause_waiter_);
  } else {
    server_.pause.RemoveWaiter(pause_waiter_);
  }
  waiting_for_acks_ = false;
  pause_timer_.cancel();
  // Ends the socket watch; nothing else is pending on a parked connection.
  boost::system::error_code ignored;
  if constexpr (kUring) {
    if (!closed_) stream_.Detach();
  } else {
    if (!closed_) socket().cancel(ignored);
  }
}

template <typename Stream>
void StreamConnection<Stream>::ResumeAfterPause(uint64_t generation) {
  if (!paused_ || generation != pause_generation_ || closed_) return;
  EndPause();
  ProcessInput();
}

template <typename Stream>
void StreamConnection<Stream>::SyncMonitor() {
  if (client_.monitor) {
    std::weak_ptr<StreamConnection> weak =
        std::static_pointer_cast<StreamConnection>(shared_from_this());
    auto executor = this->executor();
    monitor_sink_ = std::make_shared<MonitorSink>([weak, executor] {
      asio::post(executor, [weak] {
        if (auto connection = weak.lock()) connection->DrainInboxes();
      });
    });
    server_.monitors.Add(monitor_sink_);
  } else {
    server_.monitors.Remove(monitor_sink_.get());
    monitor_sink_.reset();
  }
}

template <typename Stream>
void StreamConnection<Stream>::DrainInboxes() {
  if (closed_ || (!monitor_sink_ && !client_.subscriber && !client_.link_outbox)) return;
  bool overflowed = false;
  if (monitor_sink_) out_ += monitor_sink_->Take(&overflowed);
  bool subscriber_overflowed = false;
  if (client_.subscriber) out_ += client_.subscriber->Take(&subscriber_overflowed);
  overflowed = overflowed || subscriber_overflowed;
  const uint64_t limit = server_.client_output_buffer_limit();
  // (A replica's link bounds its own bytes: see below.)
  if (overflowed || (!client_.link_outbox && out_.size() + writing_.size() > limit)) {
    // A monitor or subscriber that does not read as fast as lines and
    // messages come: cut off at client-output-buffer-limit, as Redis closes
    // a client over its limit (for subscribers its pubsub class).
    uint64_t suppressed = 0;
    if (monitor_log.Allow(NowMs(), &suppressed)) {
      spdlog::warn("closing {} {}: output over client-output-buffer-limit ({} bytes) "
                   "({} similar suppressed)",
                   monitor_sink_ ? "monitor" : "subscriber",
                   client_.info ? client_.info->addr : "?", limit, suppressed);
    }
    Close();
    return;
  }
  // A replica's link: one chunk at a time, taken when the previous write is
  // done, so the feed (and its sync thread) waits for the socket, and the
  // replies to the link's own commands keep their place ahead.
  if (client_.link_outbox && !write_in_flight_ && !awaiting_log_ && !parked_ &&
      out_.size() < kLinkChunkBytes) {
    bool link_overflowed = false;
    out_ += client_.link_outbox->Take(kLinkChunkBytes - out_.size(), &link_overflowed);
    if (link_overflowed) {
      spdlog::warn("closing replica {}: it fell more than the link buffers behind the stream",
                   client_.info ? client_.info->addr : "?");
      Close();
      return;
    }
  }
  // Replies waiting for the log or a snapshot copy keep their place ahead.
  if (!write_in_flight_ && !awaiting_log_ && !parked_ && !out_.empty()) DoWrite();
}

template <typename Stream>
void StreamConnection<Stream>::ResumeAfterCopy() {
  parked_ = false;
  SetBlocked(false);
  if (!closed_) ProcessInput();
  // Killed or closed meanwhile: the command did not run again, and a filter
  // made for it must not wait for this connection's end to be freed.
  if (closed_ || client_.close_after_reply) DropUntakenFilter(server_, client_);
}

template <typename Stream>
void StreamConnection<Stream>::ResumeAfterLogFlush(bool logged) {
  awaiting_log_ = false;
  if (closed_) return;
  if (!logged) {
    // The batch's writes are not in the log: no reply may acknowledge them.
    // The client sees the connection drop and must treat them as unknown.
    Close();
    return;
  }
  SendOrContinue();
}

template <typename Stream>
void StreamConnection<Stream>::SendOrContinue() {
  if (!out_.empty()) {
    DoWrite();
  } else if (client_.close_after_reply) {
    Close();
  } else {
    DoRead();
  }
}

template <typename Stream>
void StreamConnection<Stream>::DoWrite() {
  // Only a monitor or a subscriber gets here with a write on the wire (its
  // lines or messages and a reply): the rest goes when that write completes.
  if (write_in_flight_) return;
  writing_.swap(out_);
  out_.clear();
  write_in_flight_ = true;
  if (client_.info) client_.info->output_bytes.store(writing_.size(), std::memory_order_relaxed);
  auto self = shared_from_this();
  asio::async_write(
      stream_, asio::buffer(writing_),
      [this, self](const boost::system::error_code& ec, size_t bytes) {
        write_in_flight_ = false;
        if (client_.info) client_.info->output_bytes.store(0, std::memory_order_relaxed);
        Bump(server_.stats.worker(client_.worker_index).net_output_bytes, bytes);
        if (writing_.capacity() > kShrinkAbove) {
          std::string().swap(writing_);
        } else {
          writing_.clear();
        }
        if (ec) session_open_ = false;
        if (ec || stopping_ || client_.close_after_reply) {
          Close();
          return;
        }
        // More complete commands may be buffered (the batch was cut at the
        // high-water mark); ProcessInput reads again when there are none.
        ProcessInput();
        // A replica's link sends its next chunk once this one is out.
        if (client_.link_outbox && !closed_) DrainInboxes();
      });
}

template <typename Stream>
void StreamConnection<Stream>::SetBlocked(bool blocked) {
  if (client_.info) client_.info->blocked.store(blocked, std::memory_order_relaxed);
}

template <typename Stream>
void StreamConnection<Stream>::NoteCloseAfterReply() {
  if (client_.info) client_.info->close_after_reply.store(true, std::memory_order_relaxed);
}

template <typename Stream>
void StreamConnection<Stream>::Close() {
  if (closed_) return;
  closed_ = true;
  handshake_timer_.cancel();
  if (paused_) EndPause();
  if (monitor_sink_) {
    server_.monitors.Remove(monitor_sink_.get());
    monitor_sink_.reset();
  }
  // Off every channel and pattern now: PUBLISH stops counting it.
  LeavePubSub(server_, client_);
  // A WAIT it was held in is over.
  if (client_.info) server_.replication->EndWait(client_.info.get());
  // A replica's link: its feed stops taking the stream, its sync ends.
  if (client_.link_outbox) {
    client_.link_outbox->Closed();
    client_.link_outbox.reset();
  }
  if (client_.info) {
    client_.info->set_close_hook(nullptr);  // a later CLIENT KILL finds it gone
    server_.clients.Unregister(client_.info->id);
  }
  refusal_slot_.reset();
  // A client gone half-way through a big argument: its buffer is freed off
  // the loop too (unless a read still points into it: then with the
  // connection).
  if (in_.capacity() > kShrinkAbove && !read_in_flight_) {
    server_.lazy_freer.Free(in_.Release());
  }
  auto self = shared_from_this();  // the manager may hold the last reference
  manager_.Remove(self);
  if constexpr (kTls) {
    // QUIT, CLIENT KILL, a refusal, the idle timeout, shutdown: the session
    // ends with a close_notify, so the peer can tell the end from a cut
    // (Redis omits it). Not after a failed read or write (the session is
    // broken), nor with a write still in flight (a monitor over its output
    // limit): the alert would queue behind bytes the peer is not reading.
    if (session_open_ && !write_in_flight_) {
      if (read_in_flight_) {
        close_notify_after_read_ = true;
        boost::system::error_code ignored;
        socket().cancel(ignored);
      } else {
        SendCloseNotify();
      }
      return;
    }
  }
  CloseSocket();
}

template <typename Stream>
void StreamConnection<Stream>::SendCloseNotify() {
  if constexpr (kTls) {
    auto self = shared_from_this();
    shutdown_timer_.expires_after(kCloseNotifyWait);
    shutdown_timer_.async_wait([this, self](const boost::system::error_code& ec) {
      if (ec) return;
      // The peer did not answer: ends the shutdown's read with operation_aborted.
      boost::system::error_code ignored;
      socket().cancel(ignored);
    });
    // Completes when the peer's close_notify arrives, it closes the TCP
    // connection, or the timer cancels it.
    stream_.async_shutdown([this, self](const boost::system::error_code&) {
      shutdown_timer_.cancel();
      CloseSocket();
    });
  }
}

template <typename Stream>
void StreamConnection<Stream>::CloseSocket() {
  boost::system::error_code ec;
  // A read still pending (CLIENT KILL, the idle timeout) ends with
  // operation_aborted and finds the connection closed; only the lingering
  // read below then reads the socket.
  // So does a write that cannot finish (a killed subscriber's): its bytes
  // are dropped, not waited for.
  if (read_in_flight_ || write_in_flight_) CancelIo(ec);
  socket().shutdown(tcp::socket::shutdown_send, ec);
  linger_buf_.reset(new (std::nothrow) char[kLingerReadBytes]);
  if (ec || linger_buf_ == nullptr) {  // the peer is gone already: nothing to deliver
    socket().close(ec);
    return;
  }
  auto self = shared_from_this();
  shutdown_timer_.expires_after(kLingerWait);
  shutdown_timer_.async_wait([this, self](const boost::system::error_code& timer_ec) {
    if (timer_ec) return;
    boost::system::error_code ignored;
    socket().cancel(ignored);  // ends the lingering read
  });
  LingerRead();
}

template <typename Stream>
void StreamConnection<Stream>::LingerRead() {
  auto self = shared_from_this();
  socket().async_read_some(asio::buffer(linger_buf_.get(), kLingerReadBytes),
                           [this, self](const boost::system::error_code& ec, size_t) {
                             if (!ec) {
                               LingerRead();
                               return;
                             }
                             // The peer's FIN, a reset, or the timer.
                             shutdown_timer_.cancel();
                             boost::system::error_code ignored;
                             socket().close(ignored);
                           });
}

}  // namespace

std::shared_ptr<Connection> MakeTlsRefusal(tcp::socket socket,
                                           std::shared_ptr<ssl::context> context,
                                           std::string error, std::shared_ptr<void> slot,
                                           ServerContext& server, ConnectionManager& manager,
                                           size_t worker_index) {
  return std::make_shared<StreamConnection<TlsStream>>(std::move(socket), std::move(context),
                                                       server, manager, worker_index,
                                                       std::move(error), std::move(slot));
}

std::shared_ptr<Connection> MakeTcpConnection(tcp::socket socket, ServerContext& server,
                                              ConnectionManager& manager, size_t worker_index,
                                              UringLoop* uring) {
  if (uring != nullptr) {
    return std::make_shared<StreamConnection<UringStream>>(
        std::move(socket), nullptr, server, manager, worker_index, std::string(), nullptr, uring);
  }
  return std::make_shared<StreamConnection<tcp::socket>>(std::move(socket), nullptr, server,
                                                         manager, worker_index);
}

std::shared_ptr<Connection> MakeTlsConnection(tcp::socket socket,
                                              std::shared_ptr<ssl::context> context,
                                              ServerContext& server, ConnectionManager& manager,
                                              size_t worker_index) {
  return std::make_shared<StreamConnection<TlsStream>>(std::move(socket), std::move(context),
                                                       server, manager, worker_index);
}

}  // namespace bloomgate
