#include "server/net/uring_loop.h"

#include <cerrno>
#include <cstring>

namespace bloomgate {
namespace {

// Completions: 8x the submission slots, so the kernel rarely parks
// completions on its overflow list (Linux >= 5.5 keeps them, it never drops).
constexpr unsigned kCompletionsPerEntry = 8;
// Cancel requests complete too, with this tag, and are only counted.
constexpr uint64_t kCancelTag = 0;

// COOP_TASKRUN: completions are turned into CQEs when the loop next enters
// the kernel (it does every pass) instead of by an interrupt of the running
// thread; a thread asleep in epoll_wait is still woken. Linux 5.19+; older
// kernels get a plain ring.
int SetUp(unsigned entries, io_uring* ring, bool* modern) {
  io_uring_params params;
  std::memset(&params, 0, sizeof params);
  params.flags = IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
  params.cq_entries = kCompletionsPerEntry * entries;
  int result = io_uring_queue_init_params(entries, ring, &params);
  *modern = result == 0;
  if (result == -EINVAL) {
    std::memset(&params, 0, sizeof params);
    result = io_uring_queue_init_params(entries, ring, &params);
  }
  return result;
}

}  // namespace

bool ProbeIoUring(std::string* why) {
  io_uring ring;
  int result = io_uring_queue_init(4, &ring, 0);
  if (result < 0) {
    *why = std::string("io_uring_setup: ") + std::strerror(-result);
    return false;
  }
  io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  io_uring_prep_nop(sqe);
  result = io_uring_submit_and_wait(&ring, 1);
  io_uring_cqe* cqe = nullptr;
  if (result >= 0) result = io_uring_peek_cqe(&ring, &cqe);
  if (result >= 0 && cqe != nullptr && cqe->res < 0) result = cqe->res;
  io_uring_queue_exit(&ring);
  if (result < 0) {
    *why = std::string("io_uring NOP: ") + std::strerror(-result);
    return false;
  }
  return true;
}

std::unique_ptr<UringLoop> UringLoop::Create(asio::io_context& context, std::string* error,
                                             unsigned entries) {
  io_uring ring;
  bool modern = false;
  const int result = SetUp(entries, &ring, &modern);
  if (result < 0) {
    *error = std::string("io_uring_setup: ") + std::strerror(-result);
    return nullptr;
  }
  auto loop = std::unique_ptr<UringLoop>(new UringLoop(context, ring));
  loop->poll_first_ = modern;
  return loop;
}

UringLoop::UringLoop(asio::io_context& context, const io_uring& ring)
    : ring_(ring), watch_(context, ring.ring_fd) {}

UringLoop::~UringLoop() {
  boost::system::error_code ignored;
  watch_.cancel(ignored);
  watch_.release();  // the ring's fd is closed by io_uring_queue_exit
  io_uring_queue_exit(&ring_);
}

io_uring_sqe* UringLoop::NextSqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    // The pass filled the submission queue: send what it has, go on. A
    // failed submit frees no slot: the caller keeps its operation waiting.
    submit_(&ring_);
    sqe = io_uring_get_sqe(&ring_);
  }
  return sqe;
}

void UringLoop::Fill(io_uring_sqe* sqe, const Waiting& op) {
  switch (op.kind) {
    case Waiting::Kind::kReceive:
      io_uring_prep_recv(sqe, op.fd, op.data, op.size, 0);
      if (poll_first_) sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
      io_uring_sqe_set_data(sqe, op.operation);
      break;
    case Waiting::Kind::kSend:
      // MSG_NOSIGNAL: a peer gone meanwhile is EPIPE, not SIGPIPE.
      io_uring_prep_send(sqe, op.fd, op.data, op.size, MSG_NOSIGNAL);
      io_uring_sqe_set_data(sqe, op.operation);
      break;
    case Waiting::Kind::kCancel:
      io_uring_prep_cancel(sqe, op.operation, 0);
      io_uring_sqe_set_data64(sqe, kCancelTag);
      break;
  }
}

void UringLoop::Prepare(const Waiting& op) {
  io_uring_sqe* sqe = waiting_.empty() ? NextSqe() : nullptr;
  if (sqe != nullptr) {
    Fill(sqe, op);
  } else {
    waiting_.push_back(op);
  }
  Queued();
}

void UringLoop::Receive(int fd, void* data, size_t size, Operation* operation) {
  Prepare({Waiting::Kind::kReceive, fd, data, size, operation});
}

void UringLoop::Send(int fd, const void* data, size_t size, Operation* operation) {
  Prepare({Waiting::Kind::kSend, fd, const_cast<void*>(data), size, operation});
}

void UringLoop::Cancel(Operation* operation) {
  Prepare({Waiting::Kind::kCancel, -1, nullptr, 0, operation});
}

void UringLoop::Queued() {
  ++in_flight_;
  if (!watching_) Watch();
  if (reaping_ || flush_posted_) return;
  // Queued by a timer or a post: one flush for everything this pass queues.
  flush_posted_ = true;
  asio::post(watch_.get_executor(), [this] {
    flush_posted_ = false;
    Submit();
  });
}

void UringLoop::Submit() {
  // Nothing queued: liburing makes no system call. Each round that frees
  // slots moves waiting operations into them, in order.
  for (;;) {
    submit_(&ring_);
    bool moved = false;
    while (!waiting_.empty()) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
      if (sqe == nullptr) break;
      Fill(sqe, waiting_.front());
      waiting_.pop_front();
      moved = true;
    }
    if (!moved) break;
  }
  if (!waiting_.empty() && !flush_posted_) {
    // The submit failed and freed nothing. Completions waiting to be reaped
    // (-EBUSY) wake the watch, whose Reap submits again; for any other
    // failure (-EAGAIN, -ENOMEM: the kernel short of memory for a moment)
    // the next loop pass tries again, other work running in between.
    flush_posted_ = true;
    asio::post(watch_.get_executor(), [this] {
      flush_posted_ = false;
      Submit();
    });
  }
}

void UringLoop::Watch() {
  watching_ = true;
  watch_.async_wait(asio::posix::stream_descriptor::wait_read,
                    [this](const boost::system::error_code& ec) {
                      watching_ = false;
                      if (ec) return;  // the loop is being destroyed
                      Reap();
                    });
}

void UringLoop::Reap() {
  reaping_ = true;
  for (;;) {
    io_uring_cqe* cqe = nullptr;
    // Also runs completions the kernel deferred to this thread (TASKRUN).
    if (io_uring_peek_cqe(&ring_, &cqe) != 0 || cqe == nullptr) {
      if (!io_uring_cq_has_overflow(&ring_)) break;
      io_uring_get_events(&ring_);
      continue;
    }
    const uint64_t tag = io_uring_cqe_get_data64(cqe);
    const int result = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    --in_flight_;
    if (tag != kCancelTag) reinterpret_cast<Operation*>(tag)->Complete(result);
  }
  reaping_ = false;
  // Every receive and send the callbacks queued, in one enter.
  Submit();
  // The ring's fd is edge-triggered in epoll: it is watched again only
  // after the queue was seen empty, and only while there is work, so a
  // graceful stop sees the loop run out of it.
  if (in_flight_ > 0 && !watching_) Watch();
}

}  // namespace bloomgate
