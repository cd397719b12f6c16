#include "server/replication/eof_framing.h"

#include <algorithm>
#include <random>

namespace bloomgate {
namespace {

// Compact the buffer once this many handed-out bytes lead it.
constexpr size_t kCompactAbove = size_t{1} << 20;

}  // namespace

std::string MakeEofMark() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device device;
  std::string mark(kEofMarkBytes, '0');
  for (char& c : mark) c = kHex[device() & 15];
  return mark;
}

std::string EofPreamble(std::string_view mark) {
  return "$EOF:" + std::string(mark) + "\r\n";
}

std::string ParseEofPreamble(std::string_view line) {
  constexpr std::string_view kPrefix = "$EOF:";
  if (line.size() != kPrefix.size() + kEofMarkBytes || line.substr(0, kPrefix.size()) != kPrefix) {
    return "";
  }
  return std::string(line.substr(kPrefix.size()));
}

EofDelimitedReader::EofDelimitedReader(std::string mark, Source source)
    : mark_(std::move(mark)), source_(std::move(source)) {}

size_t EofDelimitedReader::Available() const {
  if (ended_) return payload_end_ - begin_;
  const size_t held = buffer_.size() - begin_;
  return held > kEofMarkBytes ? held - kEofMarkBytes : 0;
}

Status EofDelimitedReader::Read(size_t n, std::string* out) {
  out->clear();
  while (true) {
    if (!ended_ && buffer_.size() - begin_ >= kEofMarkBytes &&
        std::string_view(buffer_).substr(buffer_.size() - kEofMarkBytes) == mark_) {
      ended_ = true;
      payload_end_ = buffer_.size() - kEofMarkBytes;
    }
    const size_t available = Available();
    if (available > 0) {
      const size_t take = std::min(n, available);
      out->assign(buffer_, begin_, take);
      begin_ += take;
      delivered_ += take;
      if (begin_ > kCompactAbove && !ended_) {
        buffer_.erase(0, begin_);
        begin_ = 0;
      }
      return Status::Ok();
    }
    if (ended_ || n == 0) return Status::Ok();
    Status status = source_(&buffer_);
    if (!status.ok()) return status;
  }
}

}  // namespace bloomgate
