// What a replication link sends on a client connection that became one of
// this server's replicas (PSYNC): the snapshot of a full sync, then the
// stream. Filled on other threads (the sync thread, every writer through
// the journal); the connection's loop takes the bytes when woken
// (ClientState::wake_subscriber) and after each write completes, so a
// replica that reads slowly holds back its sync thread, never a loop.
#pragma once

#include <cstddef>
#include <string>

namespace bloomgate {

class LinkOutbox {
 public:
  virtual ~LinkOutbox() = default;
  // Up to `max` bytes to send next, in order; empty when none are ready.
  // *overflowed: the replica fell further behind than the link may buffer;
  // the connection closes (the replica reconnects and resynchronises).
  virtual std::string Take(size_t max, bool* overflowed) = 0;
  // The connection closed: nothing more is taken; producers stop.
  virtual void Closed() = 0;
};

}  // namespace bloomgate
