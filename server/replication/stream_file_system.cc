#include "server/replication/stream_file_system.h"

#include <cstdint>

namespace bloomgate {
namespace {

// A stream's size is unknown until its mark: the reader is told the most a
// snapshot could be (it still refuses, before allocating, any single length
// past the format's own bounds: key names, filter headers, max-filter-memory).
constexpr uint64_t kUnknownStreamBytes = uint64_t{1} << 62;

class SinkFile : public WritableFile {
 public:
  explicit SinkFile(StreamFileSystem::Sink* sink) : sink_(sink) {}
  Status Append(std::string_view data) override { return (*sink_)(data); }
  Status Sync() override { return Status::Ok(); }
  Status Close() override { return Status::Ok(); }

 private:
  StreamFileSystem::Sink* sink_;
};

class SourceFile : public SequentialFile {
 public:
  explicit SourceFile(StreamFileSystem::Source* source) : source_(source) {}
  Status Read(size_t n, std::string* out) override { return (*source_)(n, out); }

 private:
  StreamFileSystem::Source* source_;
};

Status NotAFile(const std::string& step, const std::string& path) {
  return Status::Error(step + " " + path + ": not possible on a replication stream");
}

}  // namespace

Status StreamFileSystem::CreateNew(const std::string& path, std::unique_ptr<WritableFile>* out) {
  if (!sink_) return NotAFile("create", path);
  *out = std::make_unique<SinkFile>(&sink_);
  return Status::Ok();
}

Status StreamFileSystem::OpenForAppend(const std::string& path,
                                       std::unique_ptr<WritableFile>* out) {
  return CreateNew(path, out);
}

Status StreamFileSystem::OpenForRead(const std::string& path,
                                     std::unique_ptr<SequentialFile>* out) {
  if (!source_) return NotAFile("open", path);
  *out = std::make_unique<SourceFile>(&source_);
  return Status::Ok();
}

Status StreamFileSystem::Truncate(const std::string& path, uint64_t) {
  return NotAFile("truncate", path);
}

Status StreamFileSystem::FileSize(const std::string& path, uint64_t* size) {
  if (!source_) return NotAFile("size of", path);
  *size = kUnknownStreamBytes;
  return Status::Ok();
}

Status StreamFileSystem::ListDirectory(const std::string& dir, std::vector<std::string>*) {
  return NotAFile("list", dir);
}

}  // namespace bloomgate
