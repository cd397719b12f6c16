#include "server/commands/keys/migrate_transfer.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "persistence/dump_payload.h"
#include "server/base/clock.h"

namespace bloomgate {
namespace {

void AppendBulk(std::string* out, std::string_view bytes) {
  out->append("$").append(std::to_string(bytes.size())).append("\r\n");
  out->append(bytes).append("\r\n");
}

uint64_t ReadChunkThreshold() {
  const char* text = std::getenv("BLOOMGATE_TEST_MIGRATE_CHUNK_BYTES");
  if (text == nullptr) return kMigrateChunkBytes;
  const uint64_t bytes = std::strtoull(text, nullptr, 10);
  return std::clamp<uint64_t>(bytes, 1024, kMigrateChunkBytes);
}

constexpr std::string_view kAsking = "*1\r\n$6\r\nASKING\r\n";

}  // namespace

uint64_t MigrateChunkThreshold() {
  static const uint64_t threshold = ReadChunkThreshold();
  return threshold;
}

Status ProbeMigrateTarget(LinkSocket& socket, MigrateTarget* target) {
  *target = MigrateTarget{};
  Status status = socket.SendCommand({"INFO", "server"});
  std::string line;
  if (status.ok()) status = socket.ReadLine(&line);
  if (!status.ok() || !line.starts_with('$')) return status;  // an error reply: not ours
  const uint64_t length = std::strtoull(line.c_str() + 1, nullptr, 10);
  std::string info;
  status = socket.ReadExact(static_cast<size_t>(length) + 2, &info);
  if (!status.ok()) return status;
  target->takes_chunks = info.find("\r\nbloomgate_version:") != std::string::npos;
  target->cluster = info.find("\r\nredis_mode:cluster") != std::string::npos;
  return status;
}

Status SendRestoreAsking(LinkSocket& socket, std::string_view key, int64_t ttl_ms,
                         const AnyFilter& filter, bool replace) {
  DumpPayloadStream payload(filter);
  std::string command = "*" + std::to_string(replace ? 5 : 4) + "\r\n";
  AppendBulk(&command, "RESTORE-ASKING");
  AppendBulk(&command, key);
  AppendBulk(&command, std::to_string(ttl_ms));
  command.append("$").append(std::to_string(payload.size())).append("\r\n");
  // The command's head goes with the payload's framing, one write; then one
  // write per 4 MiB piece.
  std::string piece;
  if (payload.Next(&piece)) command.append(piece);
  Status status = socket.Write(command);
  while (status.ok() && payload.Next(&piece)) status = socket.Write(piece);
  if (!status.ok()) return status;
  return socket.Write(replace ? "\r\n$7\r\nREPLACE\r\n" : "\r\n");
}

Status SendRestoreChunks(LinkSocket& socket, std::string_view key, int64_t expire_at_ms,
                         const AnyFilter& filter, bool replace, bool asking,
                         uint64_t chunk_bytes, size_t* replies) {
  *replies = 0;
  DumpPayloadStream payload(filter);
  const uint64_t total = payload.size();
  std::string piece;
  std::string_view left;  // of `piece`, not yet sent
  for (uint64_t offset = 0; offset < total;) {
    const uint64_t n = std::min(chunk_bytes, total - offset);
    const bool last = offset + n == total;
    std::string head(asking ? kAsking : "");
    head.append(last ? (replace ? "*7\r\n" : "*6\r\n") : "*4\r\n");
    AppendBulk(&head, "RESTORE-CHUNK");
    AppendBulk(&head, key);
    AppendBulk(&head, std::to_string(offset));
    head.append("$").append(std::to_string(n)).append("\r\n");
    Status status = socket.Write(head);
    // The chunk's bytes, from as many of the stream's pieces as it spans.
    for (uint64_t sent = 0; status.ok() && sent < n;) {
      if (left.empty()) {
        payload.Next(&piece);
        left = piece;
      }
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n - sent, left.size()));
      status = socket.Write(left.substr(0, take));
      left.remove_prefix(take);
      sent += take;
    }
    std::string tail = "\r\n";
    if (last) {
      AppendBulk(&tail, "COMMIT");
      const int64_t ttl_ms = expire_at_ms == 0 ? 0 : std::max<int64_t>(1, expire_at_ms - NowMs());
      AppendBulk(&tail, std::to_string(ttl_ms));
      if (replace) AppendBulk(&tail, "REPLACE");
    }
    if (status.ok()) status = socket.Write(tail);
    if (!status.ok()) return status;
    *replies += asking ? 2 : 1;
    offset += n;
  }
  return Status::Ok();
}

Status ReadKeyReplies(LinkSocket& socket, size_t replies, std::string* error) {
  error->clear();
  for (; replies > 0; --replies) {
    std::string reply;
    const Status status = socket.ReadLine(&reply);
    if (!status.ok()) return status;
    if (reply.starts_with('-') && error->empty()) error->assign(reply, 1);
  }
  return Status::Ok();
}

}  // namespace bloomgate
