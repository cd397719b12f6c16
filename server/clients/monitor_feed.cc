#include "server/clients/monitor_feed.h"

#include <algorithm>
#include <cstdio>

namespace bloomgate {

void MonitorSink::Push(std::string_view line, uint64_t limit) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (overflowed_) return;
    if (pending_.size() + line.size() > limit) {
      overflowed_ = true;
      std::string().swap(pending_);  // the connection closes: free it now
    } else {
      pending_.append(line);
    }
    if (!wake_posted_) wake = wake_posted_ = true;
  }
  if (wake) wake_();
}

std::string MonitorSink::Take(bool* overflowed) {
  std::lock_guard lock(mutex_);
  wake_posted_ = false;
  *overflowed = overflowed_;
  std::string taken;
  taken.swap(pending_);
  return taken;
}

void MonitorFeed::Add(std::shared_ptr<MonitorSink> sink) {
  std::lock_guard lock(mutex_);
  sinks_.push_back(std::move(sink));
  count_.store(sinks_.size(), std::memory_order_relaxed);
}

void MonitorFeed::Remove(const MonitorSink* sink) {
  std::lock_guard lock(mutex_);
  std::erase_if(sinks_, [sink](const auto& s) { return s.get() == sink; });
  count_.store(sinks_.size(), std::memory_order_relaxed);
}

void MonitorFeed::Publish(std::string_view line, uint64_t limit) {
  // Under the feed's lock, so a monitor removed (closed, RESET) gets nothing
  // after Remove returned; each Push only appends and maybe posts.
  std::lock_guard lock(mutex_);
  for (const auto& sink : sinks_) sink->Push(line, limit);
}

void AppendQuoted(std::string* out, std::string_view arg) {
  out->push_back('"');
  for (char c : arg) {
    switch (c) {
      case '\\': out->append("\\\\"); break;
      case '"': out->append("\\\""); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\a': out->append("\\a"); break;
      case '\b': out->append("\\b"); break;
      default: {
        const auto byte = static_cast<unsigned char>(c);
        // isprint() in the C locale Redis runs in: 0x20..0x7e.
        if (byte >= 0x20 && byte <= 0x7e) {
          out->push_back(c);
        } else {
          char hex[5];
          std::snprintf(hex, sizeof(hex), "\\x%02x", byte);
          out->append(hex, 4);
        }
      }
    }
  }
  out->push_back('"');
}

std::string FormatMonitorLine(int64_t unix_us, std::string_view addr,
                              std::span<const std::string_view> args) {
  std::string line;
  size_t size = 32 + addr.size();
  for (std::string_view arg : args) size += arg.size() + 3;
  line.reserve(size);
  char stamp[48];
  int n = std::snprintf(stamp, sizeof(stamp), "+%lld.%06lld [0 ",
                        static_cast<long long>(unix_us / 1000000),
                        static_cast<long long>(unix_us % 1000000));
  line.append(stamp, static_cast<size_t>(n));
  line.append(addr);
  line.append("] ");
  for (size_t i = 0; i < args.size(); ++i) {
    if (i != 0) line.push_back(' ');
    AppendQuoted(&line, args[i]);
  }
  line.append("\r\n");
  return line;
}

}  // namespace bloomgate
