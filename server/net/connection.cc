#include "server/net/connection.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "server/commands/command_dispatcher.h"
#include "server/net/connection_manager.h"
#include "server/context/log_limiter.h"

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
// Buffers that grew past this for one big request or reply are released
// when idle again.
constexpr size_t kShrinkAbove = 1024 * 1024;
// Unconsumed input a client may accumulate before it is disconnected
// (Redis's client-query-buffer-limit, 1 GB); raised to fit one maximal bulk
// when proto-max-bulk-len is larger.
constexpr uint64_t kQueryBufferLimit = 1ull << 30;
// What Redis allows a client that has not authenticated yet.
constexpr uint64_t kUnauthenticatedMaxArgs = 10;
constexpr uint64_t kUnauthenticatedMaxBulk = 16 * 1024;

LogLimiter protocol_error_log(/*interval_ms=*/1000);

std::string EndpointText(const tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  std::string host = address.to_string();
  if (address.is_v6()) host = "[" + host + "]";
  return host + ":" + std::to_string(endpoint.port());
}

}  // namespace

Connection::Connection(tcp::socket socket, ServerContext& server, ConnectionManager& manager,
                       size_t worker_index)
    : socket_(std::move(socket)), server_(server), manager_(manager), reply_(&out_) {
  client_.worker_index = worker_index;
  // Protocol errors are counted in INFO errorstats too.
  reply_.set_error_observer(&server_.error_stats);
}

void Connection::Start() {
  boost::system::error_code ec;
  tcp::endpoint remote = socket_.remote_endpoint(ec);
  tcp::endpoint local = socket_.local_endpoint(ec);
  socket_.set_option(tcp::no_delay(true), ec);
  last_activity_ms_ = NowMs();
  client_.info = server_.clients.Register(EndpointText(remote), EndpointText(local),
                                          last_activity_ms_);
  // CLIENT KILL from any thread: the close runs on this connection's loop.
  // A kill of the client running CLIENT KILL closes it after its reply.
  std::weak_ptr<Connection> weak = shared_from_this();
  client_.info->set_killer([weak, executor = socket_.get_executor()] {
    asio::post(executor, [weak] {
      if (auto self = weak.lock()) self->Kill();
    });
  });
  ServerConfig config = server_.config.Get();
  client_.authenticated = config.requirepass.empty();
  proto_max_bulk_len_ = config.proto_max_bulk_len;
  UpdateParserLimits();
  in_.resize(kMinReadSpace);
  Bump(server_.stats.worker(client_.worker_index).connections_received);
  DoRead();
}

void Connection::UpdateParserLimits() {
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

void Connection::Stop() {
  if (stopping_ || closed_) return;
  stopping_ = true;
  // A connection waiting in a read is woken by cancelling it; its handler
  // then answers what the client already sent (DrainForStop). One that is
  // writing closes when the write completes.
  boost::system::error_code ignored;
  if (!write_in_flight_) socket_.cancel(ignored);
}

void Connection::DrainForStop() {
  // Commands the client sent before the stop are answered: take whatever is
  // already in the socket without waiting for more.
  boost::system::error_code ec;
  socket_.non_blocking(true, ec);
  while (!ec) {
    if (in_.size() - in_end_ < kMinReadSpace) in_.resize(in_.size() * 2);
    size_t bytes = socket_.read_some(asio::buffer(in_.data() + in_end_, in_.size() - in_end_), ec);
    in_end_ += bytes;
    if (in_end_ - in_begin_ > kQueryBufferLimit) break;
  }
  ProcessInput();
}

void Connection::DoRead() {
  if (stopping_) {
    Close();
    return;
  }
  if (in_begin_ == in_end_) {
    in_begin_ = in_end_ = 0;
    if (in_.size() > kShrinkAbove) {
      in_.resize(kMinReadSpace);
      in_.shrink_to_fit();
    }
  }
  if (in_.size() - in_end_ < kMinReadSpace) {
    // Move the unconsumed tail to the front; grow only if that is not
    // enough. The buffer grows with bytes that arrived, never with a size a
    // client merely claimed.
    std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
    in_end_ -= in_begin_;
    in_begin_ = 0;
    if (in_.size() - in_end_ < kMinReadSpace) {
      if (in_end_ > std::max(kQueryBufferLimit, proto_max_bulk_len_ + kMinReadSpace)) {
        uint64_t suppressed = 0;
        if (protocol_error_log.Allow(NowMs(), &suppressed)) {
          spdlog::warn("closing client {}: query buffer over {} bytes ({} similar suppressed)",
                       client_.info ? client_.info->addr : "?", in_end_, suppressed);
        }
        Close();
        return;
      }
      in_.resize(in_.size() * 2);
    }
  }
  auto self = shared_from_this();
  socket_.async_read_some(
      asio::buffer(in_.data() + in_end_, in_.size() - in_end_),
      [this, self](const boost::system::error_code& ec, size_t bytes) {
        if (ec == asio::error::operation_aborted && stopping_ && !closed_) {
          DrainForStop();
          return;
        }
        if (ec) {
          // EOF or reset: the client is gone, not a server failure.
          Close();
          return;
        }
        in_end_ += bytes;
        last_activity_ms_ = NowMs();
        if (client_.info) {
          client_.info->last_interaction_ms.store(last_activity_ms_, std::memory_order_relaxed);
        }
        Bump(server_.stats.worker(client_.worker_index).net_input_bytes, bytes);
        ProcessInput();
      });
}

void Connection::ProcessInput() {
  // client-output-buffer-limit: once this many reply bytes are pending the
  // client's commands stop running (and it is not read) until the socket
  // has taken them. Read per batch, so CONFIG SET applies at once.
  const uint64_t high_water =
      std::min<uint64_t>(kOutputHighWater, server_.client_output_buffer_limit());
  while (!client_.close_after_reply && out_.size() < high_water) {
    std::string_view input(in_.data() + in_begin_, in_end_ - in_begin_);
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
    DispatchCommand(server_, client_, args_, reply_);
    if (reply_.errors_written() != errors_before) {
      Bump(server_.stats.worker(client_.worker_index).error_replies,
           reply_.errors_written() - errors_before);
    }
    in_begin_ += consumed;
    if (parser_unauthenticated_ && client_.authenticated) UpdateParserLimits();
  }
  if (client_.journal.log_sequence != 0) {
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

void Connection::ResumeAfterLogFlush(bool logged) {
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

void Connection::SendOrContinue() {
  if (!out_.empty()) {
    DoWrite();
  } else if (client_.close_after_reply) {
    Close();
  } else {
    DoRead();
  }
}

void Connection::DoWrite() {
  writing_.swap(out_);
  out_.clear();
  write_in_flight_ = true;
  if (client_.info) client_.info->output_bytes.store(writing_.size(), std::memory_order_relaxed);
  auto self = shared_from_this();
  asio::async_write(
      socket_, asio::buffer(writing_),
      [this, self](const boost::system::error_code& ec, size_t bytes) {
        write_in_flight_ = false;
        if (client_.info) client_.info->output_bytes.store(0, std::memory_order_relaxed);
        Bump(server_.stats.worker(client_.worker_index).net_output_bytes, bytes);
        if (writing_.capacity() > kShrinkAbove) {
          std::string().swap(writing_);
        } else {
          writing_.clear();
        }
        if (ec || stopping_ || client_.close_after_reply) {
          Close();
          return;
        }
        // More complete commands may be buffered (the batch was cut at the
        // high-water mark); ProcessInput reads again when there are none.
        ProcessInput();
      });
}

void Connection::Kill() {
  if (closed_) return;
  if (write_in_flight_ || awaiting_log_) {
    // Replies of the batch already run are sent first; then it closes.
    client_.close_after_reply = true;
    return;
  }
  Close();
}

void Connection::Close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  if (client_.info) server_.clients.Unregister(client_.info->id);
  manager_.Remove(shared_from_this());
}

}  // namespace bloomgate
