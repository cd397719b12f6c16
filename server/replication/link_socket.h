// The replica's end of its link to the primary: one blocking TCP socket
// on the link's own thread, with a deadline on every read and write, and
// Shutdown from any thread (REPLICAOF, CLIENT KILL TYPE master) to wake a
// read in progress.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "persistence/status.h"

namespace bloomgate {

class LinkSocket {
 public:
  LinkSocket() = default;
  ~LinkSocket();
  LinkSocket(const LinkSocket&) = delete;
  LinkSocket& operator=(const LinkSocket&) = delete;

  Status Connect(const std::string& host, uint16_t port, int timeout_ms);
  // The read and write deadline of every later call.
  void set_timeout_ms(int timeout_ms) { timeout_ms_ = timeout_ms; }
  Status Write(std::string_view bytes);
  // A RESP command, as an array of bulk strings.
  Status SendCommand(const std::vector<std::string>& args);
  // One line, without its "\r\n" (Redis's primary may send bare "\n"
  // keep-alives before a reply: those come back as empty lines).
  Status ReadLine(std::string* line);
  // Exactly n bytes into *out (appended).
  Status ReadExact(size_t n, std::string* out);
  // What has arrived (at least one byte), appended to *out.
  Status ReadSome(std::string* out);
  // Whether a byte is readable within `wait_ms` (false on timeout, true on
  // data or on an error the next read reports).
  bool Readable(int wait_ms);
  // Wakes a blocked read or write with an error; safe from any thread.
  void Shutdown();
  void Close();

  std::string local_address() const;  // "ip:port" of this end
  std::string peer_address() const;

 private:
  Status FillSome();

  // Close and Shutdown under fd_mutex_, so Shutdown never reaches a
  // descriptor number Close released (and the kernel may have reused).
  std::mutex fd_mutex_;
  std::atomic<int> fd_{-1};
  int timeout_ms_ = 60'000;
  std::string buffer_;  // received, not yet handed out
  size_t begin_ = 0;
};

}  // namespace bloomgate
