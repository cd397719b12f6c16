// One TCP connection of the cluster bus, either way: "to" a node (this node
// connected, sends its PINGs and reads the PONGs) or "from" one (accepted,
// reads its PINGs and MEETs and answers on the same socket). Any message
// type may arrive on either. Lives on the bus's one loop; its handlers
// hold shared_from_this(), and operation_aborted means the link is closing.
//
// Every read has a deadline: a link that delivers no complete message for
// `read_deadline_ms` is closed (peers ping at least every node timeout / 2,
// so a live link is never silent that long). A message is decoded only once
// whole, and its header is checked first, so nothing is allocated from a
// peer's declared length beyond kBusMaxBodyBytes.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "server/cluster_bus/bus_asio.h"
#include "server/cluster_bus/bus_codec.h"

namespace bloomgate {

// A link's send queue past this is a peer that stopped reading: the link is
// closed (Redis's cluster-link-sendbuf-limit, whose default is off; ours is
// set far above a PING's few KB).
inline constexpr size_t kBusLinkSendLimitBytes = 16 * 1024 * 1024;

class BusLink : public std::enable_shared_from_this<BusLink> {
 public:
  enum class Direction { kTo, kFrom };
  struct Callbacks {
    // A decoded message; the link stays usable for replies.
    std::function<void(const std::shared_ptr<BusLink>&, const BusMessage&)> on_message;
    // An outbound link's connection came up.
    std::function<void(const std::shared_ptr<BusLink>&)> on_connected;
    // Closed for any reason (error, deadline, refused bytes, Close()).
    std::function<void(const std::shared_ptr<BusLink>&)> on_closed;
  };

  BusLink(bus::asio::io_context& loop, Direction direction, std::string node_id,
          int64_t create_time_ms, int64_t read_deadline_ms, Callbacks callbacks);
  BusLink(bus::tcp::socket socket, int64_t create_time_ms, int64_t read_deadline_ms,
          Callbacks callbacks);

  // Outbound: connects within the read deadline, then reads.
  void Connect(const std::string& ip, uint16_t port);
  // Inbound: starts reading.
  void Start();
  // Queues an encoded message (one write in flight, the rest behind it).
  void Send(std::string bytes);
  void Close();

  Direction direction() const { return direction_; }
  bool connected() const { return connected_; }
  // The connection came up at some point (an outbound one may close
  // without ever connecting: refused, unreachable).
  bool ever_connected() const { return ever_connected_; }
  bool closed() const { return closed_; }
  const std::string& node_id() const { return node_id_; }
  void set_node_id(std::string id) { node_id_ = std::move(id); }
  int64_t create_time_ms() const { return create_time_ms_; }
  const std::string& peer_ip() const { return peer_ip_; }
  const std::string& local_ip() const { return local_ip_; }
  size_t send_buffer_used() const { return queued_bytes_; }
  size_t send_buffer_allocated() const;
  bool writing() const { return writing_; }

 private:
  void DoRead();
  void DoWrite();
  void ArmDeadline();
  void LearnAddresses();
  // Decodes every whole message in input_; false when the bytes are refused.
  bool DrainInput();

  bus::tcp::socket socket_;
  bus::asio::steady_timer deadline_;
  Direction direction_;
  std::string node_id_;
  int64_t create_time_ms_;
  int64_t read_deadline_ms_;
  Callbacks callbacks_;
  std::string input_;
  std::array<char, 16 * 1024> chunk_{};
  std::deque<std::string> output_;
  size_t queued_bytes_ = 0;
  bool writing_ = false;
  bool connected_ = false;
  bool ever_connected_ = false;
  bool closed_ = false;
  std::string peer_ip_;
  std::string local_ip_;
};

}  // namespace bloomgate
