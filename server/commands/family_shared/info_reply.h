// The reply of BF.INFO, CBF.INFO and CF.INFO: named fields in a fixed order,
// optionally one of them picked by a selector word.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string_view>

#include "server/catalogue/command_table.h"
#include "server/commands/errors.h"
#include "server/resp/reply_builder.h"

namespace bloomgate {

struct InfoField {
  std::string_view selector;  // e.g. "CAPACITY"; empty = not selectable
  std::string_view name;      // e.g. "Capacity", sent as a simple string
  std::function<void(ReplyBuilder&)> write_value;
  bool listed = true;  // false: only answered when its selector is asked for
};

// Without a selector: every field, a map (RESP3) or a flat array (RESP2).
// With one: RESP2 a singleton array, RESP3 a one-entry map (RedisBloom).
// An unknown selector is "Invalid information value".
// Returns false when the reply is that error.
[[nodiscard]] inline bool ReplyInfoFields(ReplyBuilder& reply, std::span<const InfoField> fields,
                                          std::optional<std::string_view> selector) {
  if (selector) {
    for (const InfoField& field : fields) {
      if (field.selector.empty() || !EqualsIgnoreCase(*selector, field.selector)) continue;
      if (reply.resp3()) {
        reply.MapHeader(1);
        reply.SimpleString(field.name);
      } else {
        reply.ArrayHeader(1);
      }
      field.write_value(reply);
      return true;
    }
    reply.Error(errors::kInvalidInfoValue);
    return false;
  }
  size_t listed = 0;
  for (const InfoField& field : fields) listed += field.listed ? 1 : 0;
  reply.MapHeader(listed);
  for (const InfoField& field : fields) {
    if (!field.listed) continue;
    reply.SimpleString(field.name);
    field.write_value(reply);
  }
  return true;
}

}  // namespace bloomgate
