// One client connection: its socket, read buffer, RESP parser and reply
// buffer, bound to one io_context for its whole life.
//
// The cycle is read -> execute every complete command in the buffer ->
// write all their replies in one write -> read again. Reads and writes never
// overlap, so a client that stops reading its replies stops being read: its
// pending output is bounded by one batch (at most kOutputHighWater plus the
// last reply), and pipelined commands cost one read and one write system
// call per batch instead of one per command.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/context/client_state.h"
#include "server/context/server_context.h"
#include "server/net/asio.h"
#include "server/resp/reply_builder.h"
#include "server/resp/resp_parser.h"

namespace bloomgate {

class ConnectionManager;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, ServerContext& server, ConnectionManager& manager,
             size_t worker_index);

  void Start();
  // Graceful stop: an idle connection closes now, one that is writing
  // closes when its replies are out.
  void Stop();
  int64_t last_activity_ms() const { return last_activity_ms_; }
  // Called by the manager once this connection's log records are durable
  // (`logged`) or could not be written: sends the replies, or closes.
  void ResumeAfterLogFlush(bool logged);
  tcp::socket::executor_type executor() { return socket_.get_executor(); }

 private:
  void DoRead();
  void DoWrite();
  void ProcessInput();
  // After a batch: write its replies, or close, or read more.
  void SendOrContinue();
  void DrainForStop();
  void Close();
  // CLIENT KILL, run on this connection's loop.
  void Kill();
  void UpdateParserLimits();

  tcp::socket socket_;
  ServerContext& server_;
  ConnectionManager& manager_;

  std::vector<char> in_;
  size_t in_begin_ = 0;  // first byte not yet consumed
  size_t in_end_ = 0;    // one past the last byte read
  RespParser parser_;
  std::vector<std::string_view> args_;
  bool parser_unauthenticated_ = false;

  std::string out_;      // replies being built
  std::string writing_;  // replies on the wire
  ReplyBuilder reply_;
  bool write_in_flight_ = false;
  bool awaiting_log_ = false;  // replies held until the log has the batch's writes
  bool stopping_ = false;
  bool closed_ = false;
  int64_t last_activity_ms_ = 0;

  ClientState client_;
  uint64_t proto_max_bulk_len_ = 0;
};

}  // namespace bloomgate
