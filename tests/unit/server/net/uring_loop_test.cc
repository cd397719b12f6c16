// The io_uring loop's submission slots (server/net/uring_loop.h): operations
// asked for while every slot is taken, and the submit meant to free one
// fails, wait in order for slots instead of being written through a null
// submission entry.
#include "server/net/uring_loop.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace bloomgate {
namespace {

// How many submits fail before they work again.
int failing_submits = 0;
int FailingSubmit(io_uring* ring) {
  if (failing_submits > 0) {
    --failing_submits;
    return -EBUSY;
  }
  return io_uring_submit(ring);
}

struct Receive final : UringLoop::Operation {
  void Complete(int r) override {
    result = r;
    done = true;
  }
  char byte = 0;
  int result = 0;
  bool done = false;
};

TEST(UringLoop, OperationsBeyondAFullQueueWaitForSlotsWhenTheSubmitFails) {
  std::string why;
  if (!ProbeIoUring(&why)) GTEST_SKIP() << "io_uring refused here: " << why;
  asio::io_context context;
  std::string error;
  std::unique_ptr<UringLoop> loop = UringLoop::Create(context, &error, /*entries=*/4);
  ASSERT_NE(loop, nullptr) << error;
  loop->set_submit_for_testing(&FailingSubmit);

  // Sixteen sockets with a byte each to read: four times the queue's depth.
  constexpr size_t kSockets = 16;
  std::vector<std::array<int, 2>> pairs(kSockets);
  std::vector<Receive> receives(kSockets);
  for (auto& pair : pairs) {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, pair.data()), 0);
    ASSERT_EQ(write(pair[1], "x", 1), 1);
  }
  // Asked from a posted handler, as a timer's or another thread's work
  // would be; the first submits (the full queue's, then the pass's flush)
  // fail as a ring with completions not yet reaped makes them.
  failing_submits = 3;
  asio::post(context, [&] {
    for (size_t i = 0; i < kSockets; ++i) {
      loop->Receive(pairs[i][0], &receives[i].byte, 1, &receives[i]);
    }
    EXPECT_GT(loop->waiting(), 0u) << "no operation had to wait: the full queue was not reached";
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  size_t done = 0;
  while (done < kSockets && std::chrono::steady_clock::now() < deadline) {
    context.run_for(std::chrono::milliseconds(10));
    context.restart();
    done = 0;
    for (const Receive& r : receives) done += r.done ? 1 : 0;
  }
  EXPECT_EQ(done, kSockets);
  for (const Receive& r : receives) {
    EXPECT_EQ(r.result, 1);
    EXPECT_EQ(r.byte, 'x');
  }
  EXPECT_EQ(loop->waiting(), 0u);
  EXPECT_EQ(loop->in_flight(), 0u);
  EXPECT_EQ(failing_submits, 0) << "the failing submits were not all met";
  for (auto& pair : pairs) {
    close(pair[0]);
    close(pair[1]);
  }
}

}  // namespace
}  // namespace bloomgate
