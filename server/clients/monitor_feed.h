// MONITOR: every command any client runs, as one line to every monitoring
// connection, in Redis's format:
//   +1339518083.107412 [0 127.0.0.1:60866] "keys" "*"\r\n
// (unix time in microseconds, database 0, the client's address, each
// argument quoted and escaped as Redis's sdscatrepr does). The same bytes
// go to RESP2 and RESP3 monitors, as Redis sends them.
//
// Commands run on every event loop thread and monitors live on any of
// them: a line is appended to each monitor's MonitorSink under the sink's
// mutex, and the sink asks its connection's loop (once until it is drained)
// to take what arrived. Nobody monitoring costs one relaxed load per
// command (active()).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bloomgate {

// One monitoring connection's inbox.
class MonitorSink {
 public:
  // `wake` must only post to the connection's loop: it is called on the
  // thread of whichever client ran the command.
  explicit MonitorSink(std::function<void()> wake) : wake_(std::move(wake)) {}

  // Appends `line`. Past `limit` pending bytes (client-output-buffer-limit)
  // nothing more is kept and the sink is marked overflowed: its connection
  // is closed when it drains, as Redis closes a client over its limit, so a
  // monitor that stops reading never grows the server's memory past that.
  void Push(std::string_view line, uint64_t limit);
  // On the connection's loop: everything pushed since the last Take.
  std::string Take(bool* overflowed);

 private:
  std::mutex mutex_;
  std::string pending_;
  bool wake_posted_ = false;
  bool overflowed_ = false;
  std::function<void()> wake_;
};

class MonitorFeed {
 public:
  bool active() const { return count_.load(std::memory_order_relaxed) != 0; }
  void Add(std::shared_ptr<MonitorSink> sink);
  void Remove(const MonitorSink* sink);
  // To every monitor.
  void Publish(std::string_view line, uint64_t limit);
  size_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<MonitorSink>> sinks_;
  std::atomic<size_t> count_{0};
};

// `arg` in double quotes, with \\ \" \n \r \t \a \b escaped and every other
// byte outside printable ASCII as \xHH (Redis's sdscatrepr).
void AppendQuoted(std::string* out, std::string_view arg);

// The whole line, "+<sec>.<usec> [0 <addr>] <args>\r\n".
std::string FormatMonitorLine(int64_t unix_us, std::string_view addr,
                              std::span<const std::string_view> args);

}  // namespace bloomgate
