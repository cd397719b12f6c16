#include "server/net/io_backend.h"

#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <string>

#include "server/net/uring_loop.h"

namespace bloomgate {
namespace {

int probes = 0;
bool ProbePasses(std::string*) {
  ++probes;
  return true;
}
bool ProbeRefused(std::string* why) {
  ++probes;
  *why = "io_uring_setup: Operation not permitted";
  return false;
}

TEST(IoBackend, EpollNeverProbes) {
  probes = 0;
  IoBackendChoice choice = ChooseIoBackend(ServerConfig::IoBackend::kEpoll, ProbePasses);
  EXPECT_TRUE(choice.ok);
  EXPECT_FALSE(choice.io_uring);
  EXPECT_EQ(choice.message, "io-backend: epoll");
  EXPECT_EQ(probes, 0);
}

TEST(IoBackend, AutoTakesIoUringWhenTheProbePasses) {
  IoBackendChoice choice = ChooseIoBackend(ServerConfig::IoBackend::kAuto, ProbePasses);
  EXPECT_TRUE(choice.ok);
  EXPECT_TRUE(choice.io_uring);
  EXPECT_EQ(choice.message, "io-backend: io_uring");
}

TEST(IoBackend, AutoFallsBackToEpollAndSaysWhy) {
  IoBackendChoice choice = ChooseIoBackend(ServerConfig::IoBackend::kAuto, ProbeRefused);
  EXPECT_TRUE(choice.ok);
  EXPECT_FALSE(choice.io_uring);
  EXPECT_EQ(choice.message,
            "io-backend: epoll (auto: the kernel refuses io_uring: io_uring_setup: Operation "
            "not permitted)");
}

TEST(IoBackend, AnExplicitIoUringThatIsRefusedDoesNotStart) {
  IoBackendChoice choice = ChooseIoBackend(ServerConfig::IoBackend::kIoUring, ProbeRefused);
  EXPECT_FALSE(choice.ok);
  EXPECT_FALSE(choice.io_uring);
  EXPECT_NE(choice.message.find("Operation not permitted"), std::string::npos) << choice.message;
}

// A seccomp filter that answers io_uring_setup with EPERM, as Docker's
// default profile does: the real probe must say no, and why.
void RefuseIoUringSetup() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program = {static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(3);
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) _exit(3);
}

TEST(IoBackendProbe, SaysNoWithTheReasonUnderASeccompProfileThatRefusesIt) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RefuseIoUringSetup();
    std::string why;
    const bool usable = ProbeIoUring(&why);
    _exit(!usable && why == "io_uring_setup: Operation not permitted" ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_NE(WEXITSTATUS(status), 3) << "could not install the seccomp filter";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(IoBackendProbe, AgreesWithTheKernel) {
  // Where io_uring_setup itself works, the probe must pass; where it fails,
  // the probe must say why.
  io_uring ring;
  const bool kernel_allows = io_uring_queue_init(2, &ring, 0) == 0;
  if (kernel_allows) io_uring_queue_exit(&ring);
  std::string why;
  EXPECT_EQ(ProbeIoUring(&why), kernel_allows) << why;
  if (!kernel_allows) EXPECT_FALSE(why.empty());
}

}  // namespace
}  // namespace bloomgate
