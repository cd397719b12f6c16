#include "server/net/io_backend.h"

namespace bloomgate {

IoBackendChoice ChooseIoBackend(ServerConfig::IoBackend wanted, IoUringProbe probe) {
  IoBackendChoice choice;
  if (wanted == ServerConfig::IoBackend::kEpoll) {
    choice.message = "io-backend: epoll";
    return choice;
  }
  std::string why;
  if (probe(&why)) {
    choice.io_uring = true;
    choice.message = "io-backend: io_uring";
    return choice;
  }
  if (wanted == ServerConfig::IoBackend::kIoUring) {
    choice.ok = false;
    choice.message = "io-backend io_uring: the kernel refuses io_uring (" + why +
                     "); use io-backend epoll or auto";
    return choice;
  }
  choice.message = "io-backend: epoll (auto: the kernel refuses io_uring: " + why + ")";
  return choice;
}

}  // namespace bloomgate
