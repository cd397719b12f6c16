// The snapshot format's readers and writers work on a FileSystem
// (persistence/file_system.h); a full sync streams a snapshot over a link
// without a file on either side. These adaptors are that FileSystem:
//  - on the primary, WriteSnapshot's one file goes to the replica's feed
//    (its rename and fsyncs mean nothing for a stream and succeed);
//  - on the replica, ReadSnapshot's one file is the EOF-delimited payload
//    read off the socket (its size is not known: reported as the largest
//    a snapshot may be, and the reader stops at the mark).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "persistence/file_system.h"

namespace bloomgate {

class StreamFileSystem : public FileSystem {
 public:
  // Where written bytes go (may block); nullptr for a read-only stream.
  using Sink = std::function<Status(std::string_view)>;
  // Where read bytes come from: up to n into *out, empty at the end.
  using Source = std::function<Status(size_t n, std::string* out)>;

  StreamFileSystem(Sink sink, Source source) : sink_(std::move(sink)), source_(std::move(source)) {}

  Status CreateNew(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status OpenForAppend(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status OpenForRead(const std::string& path, std::unique_ptr<SequentialFile>* out) override;
  Status Rename(const std::string&, const std::string&) override { return Status::Ok(); }
  Status SyncDirectory(const std::string&) override { return Status::Ok(); }
  Status Remove(const std::string&) override { return Status::Ok(); }
  Status Truncate(const std::string& path, uint64_t) override;
  Status FileSize(const std::string& path, uint64_t* size) override;
  bool Exists(const std::string&) override { return source_ != nullptr; }
  Status ListDirectory(const std::string& dir, std::vector<std::string>* names) override;

 private:
  Sink sink_;
  Source source_;
};

}  // namespace bloomgate
