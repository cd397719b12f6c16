// The RedisBloom module entry that HELLO and MODULE LIST both report, so
// libraries that probe for RedisBloom find it.
#pragma once

#include "server/context/server_context.h"
#include "server/resp/reply_builder.h"

namespace bloomgate {

inline void ReplyModuleList(ReplyBuilder& reply) {
  reply.ArrayHeader(1);
  reply.MapHeader(4);
  reply.Bulk("name");
  reply.Bulk("bf");
  reply.Bulk("ver");
  reply.Integer(kBloomModuleVersion);
  reply.Bulk("path");
  reply.Bulk("built-in");
  reply.Bulk("args");
  reply.ArrayHeader(0);
}

}  // namespace bloomgate
