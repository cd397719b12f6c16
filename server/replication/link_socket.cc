#include "server/replication/link_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

namespace bloomgate {
namespace {

constexpr size_t kReadChunk = size_t{64} << 10;
// A connect waits at most this long (a stop waits for it: it cannot be
// woken); the link retries every second anyway.
constexpr int kConnectTimeoutMs = 5000;

std::string Errno(std::string_view step) {
  return std::string(step) + ": " + std::strerror(errno);
}

std::string AddressText(const sockaddr_storage& address) {
  char host[INET6_ADDRSTRLEN] = {};
  uint16_t port = 0;
  if (address.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

// Waits until `fd` is ready for `events`: false on timeout.
bool WaitFor(int fd, short events, int timeout_ms) {
  pollfd p{.fd = fd, .events = events, .revents = 0};
  while (true) {
    const int ready = poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    return ready != 0;
  }
}

}  // namespace

LinkSocket::~LinkSocket() { Close(); }

Status LinkSocket::Connect(const std::string& host, uint16_t port, int timeout_ms) {
  Close();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return Status::Error("resolving " + host + ": " + gai_strerror(rc));
  }
  std::string last_error = "no address for " + host;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      last_error = Errno("socket");
      continue;
    }
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      if (!WaitFor(fd, POLLOUT, std::min(timeout_ms, kConnectTimeoutMs))) {
        errno = ETIMEDOUT;
      } else {
        int error = 0;
        socklen_t len = sizeof(error);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
        errno = error;
        rc = error == 0 ? 0 : -1;
      }
    }
    if (rc == 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
      {
        std::lock_guard lock(fd_mutex_);
        fd_.store(fd);
      }
      freeaddrinfo(found);
      timeout_ms_ = timeout_ms;
      return Status::Ok();
    }
    last_error = Errno("connecting to " + host + ":" + service);
    ::close(fd);
  }
  freeaddrinfo(found);
  return Status::Error(last_error);
}

Status LinkSocket::Write(std::string_view bytes) {
  while (!bytes.empty()) {
    const int fd = fd_.load();
    if (fd < 0) return Status::Error("write: the link is closed");
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!WaitFor(fd, POLLOUT, timeout_ms_)) return Status::Error("write: timed out");
      continue;
    }
    return Status::Error(Errno("write"));
  }
  return Status::Ok();
}

Status LinkSocket::SendCommand(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& arg : args) {
    out += "$" + std::to_string(arg.size()) + "\r\n" + arg + "\r\n";
  }
  return Write(out);
}

Status LinkSocket::FillSome() {
  const int fd = fd_.load();
  if (fd < 0) return Status::Error("read: the link is closed");
  if (begin_ == buffer_.size()) {
    buffer_.clear();
    begin_ = 0;
  } else if (begin_ > kReadChunk) {
    buffer_.erase(0, begin_);
    begin_ = 0;
  }
  while (true) {
    const size_t old = buffer_.size();
    buffer_.resize(old + kReadChunk);
    const ssize_t n = recv(fd, buffer_.data() + old, kReadChunk, 0);
    buffer_.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
    if (n > 0) return Status::Ok();
    if (n == 0) return Status::Error("read: the primary closed the link");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!WaitFor(fd, POLLIN, timeout_ms_)) return Status::Error("read: timed out");
      continue;
    }
    return Status::Error(Errno("read"));
  }
}

Status LinkSocket::ReadLine(std::string* line) {
  while (true) {
    const size_t newline = buffer_.find('\n', begin_);
    if (newline != std::string::npos) {
      size_t end = newline;
      if (end > begin_ && buffer_[end - 1] == '\r') --end;
      line->assign(buffer_, begin_, end - begin_);
      begin_ = newline + 1;
      return Status::Ok();
    }
    if (buffer_.size() - begin_ > kReadChunk) return Status::Error("read: a line too long");
    Status status = FillSome();
    if (!status.ok()) return status;
  }
}

Status LinkSocket::ReadExact(size_t n, std::string* out) {
  while (n > 0) {
    if (begin_ == buffer_.size()) {
      Status status = FillSome();
      if (!status.ok()) return status;
    }
    const size_t take = std::min(n, buffer_.size() - begin_);
    out->append(buffer_, begin_, take);
    begin_ += take;
    n -= take;
  }
  return Status::Ok();
}

Status LinkSocket::ReadSome(std::string* out) {
  if (begin_ == buffer_.size()) {
    Status status = FillSome();
    if (!status.ok()) return status;
  }
  out->append(buffer_, begin_, buffer_.size() - begin_);
  begin_ = buffer_.size();
  return Status::Ok();
}

bool LinkSocket::Readable(int wait_ms) {
  if (begin_ < buffer_.size()) return true;
  const int fd = fd_.load();
  if (fd < 0) return true;
  return WaitFor(fd, POLLIN, wait_ms);
}

void LinkSocket::Shutdown() {
  std::lock_guard lock(fd_mutex_);
  const int fd = fd_.load();
  if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
}

void LinkSocket::Close() {
  std::lock_guard lock(fd_mutex_);
  const int fd = fd_.exchange(-1);
  if (fd >= 0) ::close(fd);
  buffer_.clear();
  begin_ = 0;
}

std::string LinkSocket::local_address() const {
  sockaddr_storage address{};
  socklen_t len = sizeof(address);
  if (getsockname(fd_.load(), reinterpret_cast<sockaddr*>(&address), &len) != 0) return "?";
  return AddressText(address);
}

std::string LinkSocket::peer_address() const {
  sockaddr_storage address{};
  socklen_t len = sizeof(address);
  if (getpeername(fd_.load(), reinterpret_cast<sockaddr*>(&address), &len) != 0) return "?";
  return AddressText(address);
}

}  // namespace bloomgate
