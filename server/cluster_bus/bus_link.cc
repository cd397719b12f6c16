#include "server/cluster_bus/bus_link.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace bloomgate {

using bus::asio::error::operation_aborted;

BusLink::BusLink(bus::asio::io_context& loop, Direction direction, std::string node_id,
                 int64_t create_time_ms, int64_t read_deadline_ms, Callbacks callbacks)
    : socket_(loop),
      deadline_(loop),
      direction_(direction),
      node_id_(std::move(node_id)),
      create_time_ms_(create_time_ms),
      read_deadline_ms_(read_deadline_ms),
      callbacks_(std::move(callbacks)) {}

BusLink::BusLink(bus::tcp::socket socket, int64_t create_time_ms, int64_t read_deadline_ms,
                 Callbacks callbacks)
    : socket_(std::move(socket)),
      deadline_(socket_.get_executor()),
      direction_(Direction::kFrom),
      create_time_ms_(create_time_ms),
      read_deadline_ms_(read_deadline_ms),
      callbacks_(std::move(callbacks)) {}

void BusLink::LearnAddresses() {
  boost::system::error_code ec;
  const auto peer = socket_.remote_endpoint(ec);
  if (!ec) peer_ip_ = peer.address().to_string();
  const auto local = socket_.local_endpoint(ec);
  if (!ec) local_ip_ = local.address().to_string();
}

void BusLink::Connect(const std::string& ip, uint16_t port) {
  boost::system::error_code ec;
  const auto address = bus::asio::ip::make_address(ip, ec);
  if (ec) {
    Close();
    return;
  }
  ArmDeadline();
  socket_.async_connect(bus::tcp::endpoint(address, port),
                        [self = shared_from_this()](const boost::system::error_code& error) {
                          if (self->closed_) return;
                          if (error) {
                            self->Close();
                            return;
                          }
                          boost::system::error_code ignored;
                          self->socket_.set_option(bus::tcp::no_delay(true), ignored);
                          self->connected_ = true;
                          self->ever_connected_ = true;
                          self->LearnAddresses();
                          if (self->callbacks_.on_connected) self->callbacks_.on_connected(self);
                          if (self->closed_) return;
                          self->DoRead();
                          if (!self->writing_) self->DoWrite();
                        });
}

void BusLink::Start() {
  boost::system::error_code ignored;
  socket_.set_option(bus::tcp::no_delay(true), ignored);
  connected_ = true;
  ever_connected_ = true;
  LearnAddresses();
  DoRead();
}

void BusLink::ArmDeadline() {
  deadline_.expires_after(std::chrono::milliseconds(read_deadline_ms_));
  deadline_.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
    if (error == operation_aborted) return;
    if (auto self = weak.lock()) self->Close();
  });
}

void BusLink::DoRead() {
  ArmDeadline();
  socket_.async_read_some(
      bus::asio::buffer(chunk_),
      [self = shared_from_this()](const boost::system::error_code& error, size_t n) {
        if (self->closed_) return;
        if (error) {
          self->Close();
          return;
        }
        self->input_.append(self->chunk_.data(), n);
        if (!self->DrainInput()) {
          self->Close();
          return;
        }
        if (!self->closed_) self->DoRead();
      });
}

bool BusLink::DrainInput() {
  size_t offset = 0;
  while (!closed_) {
    const std::string_view rest = std::string_view(input_).substr(offset);
    BusMessage message;
    size_t consumed = 0;
    const BusDecodeStatus status = DecodeBusMessage(rest, &message, &consumed);
    if (status == BusDecodeStatus::kNeedMore) break;
    if (status != BusDecodeStatus::kOk) {
      spdlog::warn("cluster bus: closing the link {} {}: {} message",
                   direction_ == Direction::kTo ? "to" : "from",
                   peer_ip_, ToString(status));
      return false;
    }
    offset += consumed;
    if (callbacks_.on_message) callbacks_.on_message(shared_from_this(), message);
  }
  input_.erase(0, offset);
  return true;
}

void BusLink::Send(std::string bytes) {
  if (closed_) return;
  queued_bytes_ += bytes.size();
  output_.push_back(std::move(bytes));
  if (queued_bytes_ > kBusLinkSendLimitBytes) {
    Close();
    return;
  }
  if (connected_ && !writing_) DoWrite();
}

void BusLink::DoWrite() {
  if (output_.empty() || closed_) return;
  writing_ = true;
  bus::asio::async_write(
      socket_, bus::asio::buffer(output_.front()),
      [self = shared_from_this()](const boost::system::error_code& error, size_t) {
        self->writing_ = false;
        if (self->closed_) return;
        if (error) {
          self->Close();
          return;
        }
        self->queued_bytes_ -= self->output_.front().size();
        self->output_.pop_front();
        self->DoWrite();
      });
}

size_t BusLink::send_buffer_allocated() const {
  size_t bytes = 0;
  for (const std::string& message : output_) bytes += message.capacity();
  return bytes;
}

void BusLink::Close() {
  if (closed_) return;
  closed_ = true;
  connected_ = false;
  boost::system::error_code ignored;
  deadline_.cancel();
  socket_.shutdown(bus::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  if (callbacks_.on_closed) callbacks_.on_closed(shared_from_this());
}

}  // namespace bloomgate
