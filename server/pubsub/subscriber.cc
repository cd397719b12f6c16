#include "server/pubsub/subscriber.h"

#include "server/resp/reply_builder.h"

namespace bloomgate {

void Subscriber::Deliver(const std::string* pattern, std::string_view channel,
                         std::string_view payload, uint64_t limit) {
  // Formatted outside the lock: a frame is a few headers plus the payload.
  std::string frame;
  ReplyBuilder reply(&frame);
  reply.set_resp3(resp3());
  if (pattern == nullptr) {
    reply.PushHeader(3);
    reply.Bulk("message");
  } else {
    reply.PushHeader(4);
    reply.Bulk("pmessage");
    reply.Bulk(*pattern);
  }
  reply.Bulk(channel);
  reply.Bulk(payload);
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (overflowed_) return;
    if (pending_.size() + frame.size() > limit) {
      // Nothing more is kept; the connection closes when it drains.
      overflowed_ = true;
      pending_.clear();
    } else {
      pending_ += frame;
    }
    if (!wake_posted_) wake = wake_posted_ = true;
  }
  if (wake && wake_) wake_();
}

std::string Subscriber::Take(bool* overflowed) {
  std::lock_guard lock(mutex_);
  wake_posted_ = false;
  *overflowed = overflowed_;
  std::string taken;
  taken.swap(pending_);
  return taken;
}

}  // namespace bloomgate
