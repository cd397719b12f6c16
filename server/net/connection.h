// One client connection: its socket, read buffer, RESP parser and reply
// buffer, bound to one io_context for its whole life.
//
// The cycle is read -> execute every complete command in the buffer ->
// write all their replies in one write -> read again. Reads and writes never
// overlap, so a client that stops reading its replies stops being read: its
// pending output is bounded by one batch (at most kOutputHighWater plus the
// last reply), and pipelined commands cost one read and one write system
// call per batch instead of one per command.
//
// The same cycle runs over a plain TCP socket and over TLS: connection.cc
// writes it once as a template over the stream type, and the two kinds
// differ only in how they start (a TLS connection first completes its
// handshake within tls-handshake-timeout). The manager and the acceptor see
// this interface only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/net/asio.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace bloomgate {

class ConnectionManager;
class ServerContext;
class UringLoop;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  virtual ~Connection() = default;

  virtual void Start() = 0;
  // Graceful stop: an idle connection closes now, one that is writing
  // closes when its replies are out, one still in its TLS handshake closes
  // at once.
  virtual void Stop() = 0;
  // ACL DELUSER of the connection's user and CLIENT KILL, both through
  // ClientInfo::RequestClose; on the connection's own thread. No further
  // command runs; replies of commands that already ran and are being
  // written or wait for the log go out first, then it closes.
  virtual void Kill() = 0;
  virtual int64_t last_activity_ms() const = 0;
  // Not closed by the idle `timeout`, as Redis spares blocked clients and
  // replicas: one held by CLIENT PAUSE, and a monitor.
  virtual bool idle_exempt() const = 0;
  // Called by the manager once this connection's log records are durable
  // (`logged`) or could not be written: sends the replies, or closes.
  virtual void ResumeAfterLogFlush(bool logged) = 0;
  virtual asio::any_io_executor executor() = 0;
};

// `uring` (io-backend io_uring): the worker's ring carries the socket's
// receives and sends; null: the io_context's epoll does.
std::shared_ptr<Connection> MakeTcpConnection(tcp::socket socket, ServerContext& server,
                                              ConnectionManager& manager, size_t worker_index,
                                              UringLoop* uring = nullptr);

// `context` is the TLS context current at accept; the connection keeps it
// for its whole life, so a reload never changes an open session.
std::shared_ptr<Connection> MakeTlsConnection(tcp::socket socket,
                                              std::shared_ptr<boost::asio::ssl::context> context,
                                              ServerContext& server, ConnectionManager& manager,
                                              size_t worker_index);

// A client refused on the TLS port (maxclients): it is not a client (not
// registered, not counted, runs no command), but it completes its
// handshake within tls-handshake-timeout, reads `error` as an error reply
// over TLS and is closed, as the plain port answers at accept. `slot` is
// released when it closes: the acceptor bounds how many are in flight.
std::shared_ptr<Connection> MakeTlsRefusal(tcp::socket socket,
                                           std::shared_ptr<boost::asio::ssl::context> context,
                                           std::string error, std::shared_ptr<void> slot,
                                           ServerContext& server, ConnectionManager& manager,
                                           size_t worker_index);

}  // namespace bloomgate
