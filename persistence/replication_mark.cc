#include "persistence/replication_mark.h"

#include <charconv>
#include <cstdio>

#include "persistence/crc64_jones.h"
#include "persistence/replace_file.h"

namespace bloomgate {
namespace {

constexpr std::string_view kMagicLine = "bloomgate-replication-mark 1";
// Redis's replication ids: 40 hexadecimal characters.
constexpr size_t kReplidLength = 40;
// A mark is ~150 bytes; anything much larger is not one.
constexpr uint64_t kMaxMarkBytes = 4096;

std::string Hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

// The next line of *text (without its '\n'); false when none is complete.
bool TakeLine(std::string_view* text, std::string_view* line) {
  const size_t end = text->find('\n');
  if (end == std::string_view::npos) return false;
  *line = text->substr(0, end);
  text->remove_prefix(end + 1);
  return true;
}

// "<name> <value>": the value, or false.
bool FieldValue(std::string_view line, std::string_view name, std::string_view* value) {
  if (line.size() <= name.size() + 1 || line.substr(0, name.size()) != name ||
      line[name.size()] != ' ') {
    return false;
  }
  *value = line.substr(name.size() + 1);
  return true;
}

bool ParseUnsigned(std::string_view text, int base, uint64_t* value) {
  if (text.empty()) return false;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value, base);
  return error == std::errc() && end == text.data() + text.size();
}

bool IsHexId(std::string_view id) {
  if (id.size() != kReplidLength) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::string ReplicationMarkFileName(std::string_view dbfilename) {
  return std::string(dbfilename) + ".repl";
}

std::string EncodeReplicationMark(const ReplicationMark& mark) {
  std::string text;
  text.append(kMagicLine).append("\n");
  text.append("replid ").append(mark.replid).append("\n");
  text.append("offset ").append(std::to_string(mark.offset)).append("\n");
  text.append("log-generation ").append(std::to_string(mark.log_generation)).append("\n");
  const uint64_t crc = Crc64Jones(0, text);
  text.append("crc64 ").append(Hex64(crc)).append("\n");
  return text;
}

std::string DecodeReplicationMark(std::string_view text, ReplicationMark* mark) {
  const std::string_view whole = text;
  std::string_view line;
  if (!TakeLine(&text, &line) || line != kMagicLine) return "not a replication mark";
  std::string_view replid, offset, generation, crc;
  if (!TakeLine(&text, &line) || !FieldValue(line, "replid", &replid) || !IsHexId(replid)) {
    return "a bad replid line";
  }
  if (!TakeLine(&text, &line) || !FieldValue(line, "offset", &offset)) return "no offset line";
  if (!TakeLine(&text, &line) || !FieldValue(line, "log-generation", &generation)) {
    return "no log-generation line";
  }
  const std::string_view checked = whole.substr(0, whole.size() - text.size());
  uint64_t stored_crc = 0;
  if (!TakeLine(&text, &line) || !FieldValue(line, "crc64", &crc) ||
      !ParseUnsigned(crc, 16, &stored_crc)) {
    return "no crc64 line";
  }
  if (!text.empty()) return "bytes after the crc64 line";
  if (stored_crc != Crc64Jones(0, checked)) return "crc64 mismatch";
  ReplicationMark decoded;
  decoded.replid = std::string(replid);
  if (!ParseUnsigned(offset, 10, &decoded.offset)) return "a bad offset";
  if (!ParseUnsigned(generation, 10, &decoded.log_generation)) return "a bad log-generation";
  *mark = std::move(decoded);
  return "";
}

Status WriteReplicationMark(FileSystem& fs, const std::string& dir, std::string_view dbfilename,
                            const ReplicationMark& mark) {
  return ReplaceFile(fs, JoinPath(dir, ReplicationMarkFileName(dbfilename)),
                     EncodeReplicationMark(mark));
}

Status ReadReplicationMark(FileSystem& fs, const std::string& dir, std::string_view dbfilename,
                           ReplicationMark* mark, bool* found) {
  *found = false;
  const std::string path = JoinPath(dir, ReplicationMarkFileName(dbfilename));
  if (!fs.Exists(path)) return Status::Ok();
  uint64_t size = 0;
  Status status = fs.FileSize(path, &size);
  if (!status.ok()) return status;
  if (size > kMaxMarkBytes) {
    return Status::Error(path + ": " + std::to_string(size) + " bytes, too large for a mark");
  }
  std::unique_ptr<SequentialFile> file;
  status = fs.OpenForRead(path, &file);
  if (!status.ok()) return status;
  std::string text;
  status = file->Read(static_cast<size_t>(size), &text);
  if (!status.ok()) return status;
  const std::string why = DecodeReplicationMark(text, mark);
  if (!why.empty()) return Status::Error(path + ": " + why);
  *found = true;
  return Status::Ok();
}

Status RemoveReplicationMark(FileSystem& fs, const std::string& dir, std::string_view dbfilename) {
  const std::string path = JoinPath(dir, ReplicationMarkFileName(dbfilename));
  if (!fs.Exists(path)) return Status::Ok();
  Status status = fs.Remove(path);
  if (status.ok()) status = fs.SyncDirectory(dir.empty() ? "." : dir);
  return status;
}

}  // namespace bloomgate
