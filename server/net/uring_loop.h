// One io_uring per worker loop, driving the plain-TCP sockets of that loop's
// connections (io-backend io_uring) while Boost.Asio's io_context keeps
// everything else: timers, posts from other threads, TLS, the acceptor.
//
// The ring's fd is watched by the io_context's epoll like any socket, so a
// loop pass is one epoll_wait plus one io_uring_enter: completions are reaped
// in one handler, their callbacks queue the next receives and sends, and one
// submit at the end of the pass carries them all. Work queued outside a reap
// (a timer, a post) posts one flush for the pass. Against the epoll path
// this drops, per request at `-P 1`, the speculative recv that meets EAGAIN
// and the send(): three system calls (recv, recv, send) become a share of
// one enter.
//
// The watch counts as work for the io_context only while operations are in
// flight, so a graceful stop still sees each loop run out of work.
#pragma once

#include <liburing.h>

#include <cstddef>
#include <deque>
#include <string>

#include "server/net/asio.h"

namespace bloomgate {

class UringLoop {
 public:
  // What a submitted operation completes into: `result` is the CQE's res
  // (bytes, or -errno).
  class Operation {
   public:
    virtual void Complete(int result) = 0;

   protected:
    ~Operation() = default;
  };

  // Submission slots: one pass queues a receive and a send per ready
  // client, so 1024 covers 512 clients answered in one pass; past that the
  // pass submits early and goes on.
  static constexpr unsigned kSubmissionEntries = 1024;

  // Null with `error` set when the kernel (or a seccomp profile) refuses
  // io_uring. `entries`: the submission queue's depth (tests make it small).
  static std::unique_ptr<UringLoop> Create(asio::io_context& context, std::string* error,
                                           unsigned entries = kSubmissionEntries);
  ~UringLoop();
  UringLoop(const UringLoop&) = delete;
  UringLoop& operator=(const UringLoop&) = delete;

  // One receive or send on `fd`; `operation` completes exactly once (with
  // -ECANCELED after Cancel) and must stay alive until then.
  void Receive(int fd, void* data, size_t size, Operation* operation);
  void Send(int fd, const void* data, size_t size, Operation* operation);
  // Asks the kernel to end `operation` early; it still completes once.
  void Cancel(Operation* operation);

  size_t in_flight() const { return in_flight_; }
  // Operations no submission slot was free for yet, in the order asked.
  size_t waiting() const { return waiting_.size(); }

  // For tests: what submits the queue (io_uring_submit: entries submitted,
  // or -errno), so a test can make it fail.
  using SubmitFunction = int (*)(io_uring* ring);
  void set_submit_for_testing(SubmitFunction submit) { submit_ = submit; }

 private:
  // An operation asked for while every submission slot was taken: kept here
  // and put in the ring, in order, as slots free up.
  struct Waiting {
    enum class Kind { kReceive, kSend, kCancel } kind;
    int fd;
    void* data;
    size_t size;
    Operation* operation;
  };

  UringLoop(asio::io_context& context, const io_uring& ring);
  // A free slot, submitting what the ring holds to free one; null when the
  // submit freed none (it failed: -EBUSY while completions wait to be
  // reaped, -EAGAIN, -ENOMEM).
  io_uring_sqe* NextSqe();
  // Fills `sqe` with `op`, or keeps `op` waiting (behind any already
  // waiting: one socket's operations keep their order).
  void Prepare(const Waiting& op);
  void Fill(io_uring_sqe* sqe, const Waiting& op);
  // An SQE was filled: it goes out with this pass's submit.
  void Queued();
  void Submit();
  void Watch();
  void Reap();

  io_uring ring_;
  asio::posix::stream_descriptor watch_;
  std::deque<Waiting> waiting_;
  SubmitFunction submit_ = &io_uring_submit;
  size_t in_flight_ = 0;  // submitted or queued, completion not reaped
  bool watching_ = false;
  bool reaping_ = false;
  bool flush_posted_ = false;
  // A receive waits for the socket to be readable before trying it (Linux
  // 5.19+, as COOP_TASKRUN): the connection only asks once it has answered
  // everything it had, when the socket is most often empty, so the first
  // attempt would mostly meet EAGAIN.
  bool poll_first_ = false;
};

// Whether this process may use io_uring: sets up a small ring and runs a NOP
// through it. False with `why` (the errno's text) when refused.
bool ProbeIoUring(std::string* why);

}  // namespace bloomgate
