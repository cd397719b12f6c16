// Which socket I/O the worker loops use, decided once at start-up from
// `io-backend` and what the kernel allows (container seccomp profiles often
// refuse io_uring_setup with EPERM; kernels before 5.1 have none).
#pragma once

#include <string>

#include "config/server_config.h"

namespace bloomgate {

// ProbeIoUring's shape, so tests can stand in for the kernel.
using IoUringProbe = bool (*)(std::string* why);

struct IoBackendChoice {
  bool io_uring = false;
  // The start-up log line ("io-backend: io_uring", "... epoll (io_uring
  // refused: ...)"), or, when `ok` is false, why the server cannot start.
  std::string message;
  bool ok = true;
};

// epoll: never probes. io_uring: refused means the server does not start
// (it was asked for explicitly). auto: io_uring if the probe passes, else
// epoll with the reason.
IoBackendChoice ChooseIoBackend(ServerConfig::IoBackend wanted, IoUringProbe probe);

}  // namespace bloomgate
