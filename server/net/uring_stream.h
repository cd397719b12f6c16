// A plain-TCP stream whose receives and sends go through the worker's
// UringLoop instead of the io_context's epoll. It has the members of
// tcp::socket that connection.cc's template uses (async_read_some,
// async_write_some for asio::async_write, read_some, get_executor), so a
// connection over it is the same code as over tcp::socket; what the socket
// itself does (options, shutdown, close, the pause watch, the lingering
// close) stays on the tcp::socket, through the reactor.
//
// Once started (Detach), the socket is out of the reactor's epoll set: left
// in it, every segment that arrives would also wake epoll's callback and
// come back from epoll_wait as an event nobody waits for (tcp_poll,
// ep_item_poll and Asio's descriptor bookkeeping: ~5% of a -P 1 PING's
// server CPU under perf). socket() puts it back for the rare uses that need
// the reactor (a CLIENT PAUSE watch, a graceful stop's drain, the close).
//
// At most one receive and one send are in flight, as the connection never
// asks for more. A handler runs from the ring's reap, on the loop's thread,
// never inside the call that started it.
#pragma once

#include <boost/system/error_code.hpp>
#include <unistd.h>

#include <algorithm>

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "server/net/asio.h"
#include "server/net/uring_loop.h"

namespace bloomgate {

class UringStream {
 public:
  using executor_type = tcp::socket::executor_type;

  UringStream(tcp::socket socket, UringLoop& loop)
      : socket_(std::move(socket)), fd_(socket_.native_handle()), loop_(loop) {}
  ~UringStream() {
    if (detached_) ::close(fd_);
  }
  UringStream(const UringStream&) = delete;
  UringStream& operator=(const UringStream&) = delete;

  executor_type get_executor() { return socket_.get_executor(); }
  // The socket, back in the reactor if it was out.
  tcp::socket& socket() {
    if (detached_) {
      boost::system::error_code ec;
      socket_.assign(protocol_, fd_, ec);
      detached_ = ec.failed();
    }
    return socket_;
  }
  // Takes the socket out of the reactor (ending its reactor operations with
  // operation_aborted); receives and sends go on through the ring.
  void Detach() {
    if (detached_ || !socket_.is_open()) return;
    boost::system::error_code ec;
    const tcp::endpoint local = socket_.local_endpoint(ec);
    if (ec) return;
    protocol_ = local.protocol();
    socket_.release(ec);
    detached_ = !ec.failed();
  }

  template <typename MutableBuffers, typename Handler>
  void async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    const asio::mutable_buffer buffer = *asio::buffer_sequence_begin(buffers);
    receive_.Set(std::forward<Handler>(handler), /*zero_is_eof=*/true);
    loop_.Receive(fd_, buffer.data(), buffer.size(), &receive_);
  }

  // asio::async_write calls this until every byte is out.
  template <typename ConstBuffers, typename Handler>
  void async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    const asio::const_buffer buffer = *asio::buffer_sequence_begin(buffers);
    send_.Set(std::forward<Handler>(handler), /*zero_is_eof=*/false);
    // A send's length is 32 bits: a bigger reply goes in 1 GiB steps.
    loop_.Send(fd_, buffer.data(), std::min(buffer.size(), kMaxSendBytes), &send_);
  }

  // Non-blocking reads of what is already there (a graceful stop's drain).
  template <typename MutableBuffers>
  size_t read_some(const MutableBuffers& buffers, boost::system::error_code& ec) {
    return socket().read_some(buffers, ec);
  }

  // Ends the receive and send in flight with operation_aborted, as
  // tcp::socket::cancel does for the reactor's.
  void cancel(boost::system::error_code& ec) {
    if (receive_.pending()) loop_.Cancel(&receive_);
    if (send_.pending()) loop_.Cancel(&send_);
    ec.clear();
    if (!detached_) socket_.cancel(ec);
  }

 private:
  // One operation's completion handler, stored inline (no allocation per
  // request): the connection's handlers, and asio::async_write's op around
  // one, are a few pointers.
  class PendingOp final : public UringLoop::Operation {
   public:
    ~PendingOp() { Reset(); }
    bool pending() const { return call_ != nullptr; }

    template <typename Handler>
    void Set(Handler&& handler, bool zero_is_eof) {
      using H = std::decay_t<Handler>;
      static_assert(sizeof(H) <= kStorage && alignof(H) <= alignof(std::max_align_t),
                    "handler too big for the inline slot");
      new (storage_) H(std::forward<Handler>(handler));
      zero_is_eof_ = zero_is_eof;
      call_ = [](void* p, const boost::system::error_code& ec, size_t bytes) {
        H* stored = static_cast<H*>(p);
        H moved(std::move(*stored));
        stored->~H();
        moved(ec, bytes);
      };
      destroy_ = [](void* p) { static_cast<H*>(p)->~H(); };
    }

    void Complete(int result) override {
      boost::system::error_code ec;
      size_t bytes = 0;
      if (result < 0) {
        ec.assign(-result, asio::error::get_system_category());
      } else if (result == 0 && zero_is_eof_) {
        ec = asio::error::eof;
      } else {
        bytes = static_cast<size_t>(result);
      }
      auto call = std::exchange(call_, nullptr);
      destroy_ = nullptr;
      call(storage_, ec, bytes);  // may start the next operation on this slot
    }

   private:
    static constexpr size_t kStorage = 192;
    void Reset() {
      if (destroy_ != nullptr) destroy_(storage_);
      destroy_ = nullptr;
      call_ = nullptr;
    }
    alignas(std::max_align_t) unsigned char storage_[kStorage];
    void (*call_)(void*, const boost::system::error_code&, size_t) = nullptr;
    void (*destroy_)(void*) = nullptr;
    bool zero_is_eof_ = false;
  };

  static constexpr size_t kMaxSendBytes = size_t{1} << 30;

  tcp::socket socket_;
  const int fd_;
  bool detached_ = false;
  tcp protocol_ = tcp::v4();
  UringLoop& loop_;
  PendingOp receive_;
  PendingOp send_;
};

}  // namespace bloomgate
