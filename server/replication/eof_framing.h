// Redis's diskless full-sync framing: the payload is announced as
// "$EOF:<mark>\r\n", where <mark> is 40 random characters, and ends with
// the same 40 characters, so the primary streams a snapshot whose size it
// does not know in advance. Our payload is our own checksummed snapshot
// (persistence/snapshot_file.h), never Redis's RDB.
//
// The primary sends nothing after the mark until the replica's first
// REPLCONF ACK (Redis 7 waits the same way), so the mark is always the
// last 40 bytes received when it arrives: the reader holds back the last 40
// bytes it has and ends when they are the mark.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "persistence/status.h"

namespace bloomgate {

inline constexpr size_t kEofMarkBytes = 40;

// 40 random hexadecimal characters.
std::string MakeEofMark();
// "$EOF:<mark>\r\n".
std::string EofPreamble(std::string_view mark);
// The mark of a preamble line without its "\r\n" ("$EOF:<mark>"), or "" if
// the line is not one.
std::string ParseEofPreamble(std::string_view line);

class EofDelimitedReader {
 public:
  // Appends at least one byte received to *out, or fails (the link broke).
  using Source = std::function<Status(std::string* out)>;

  EofDelimitedReader(std::string mark, Source source);

  // Up to `n` payload bytes into *out (replacing it); empty once the
  // payload ended (at the mark).
  Status Read(size_t n, std::string* out);
  bool ended() const { return ended_; }
  // Payload bytes handed out so far.
  uint64_t payload_bytes() const { return delivered_; }

 private:
  // Bytes held that may be handed out: all but the last kEofMarkBytes
  // until the mark is seen, then all before it.
  size_t Available() const;

  const std::string mark_;
  Source source_;
  std::string buffer_;
  size_t begin_ = 0;      // first byte of buffer_ not handed out
  size_t payload_end_ = 0;  // once ended_: where the mark starts in buffer_
  bool ended_ = false;
  uint64_t delivered_ = 0;
};

}  // namespace bloomgate
