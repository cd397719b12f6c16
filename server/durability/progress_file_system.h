// A FileSystem that counts the bytes read from and appended to it into a
// ByteProgress, for jobs whose work is a stream of file bytes (start-up
// loading, snapshot writes). Everything else is forwarded unchanged, so the
// formats in persistence/ need no progress hooks of their own.
//
// It can also stop a read with an error when `cancel` turns true (SIGTERM
// while loading: stop at once, save nothing) and, as a test hook, hold reads
// to `max_read_bytes_per_second` so an end-to-end test can watch a load in
// progress without a multi-GB snapshot.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "persistence/file_system.h"
#include "server/durability/progress.h"

namespace bloomgate {

class ProgressFileSystem : public FileSystem {
 public:
  struct Options {
    ByteProgress* progress = nullptr;          // required
    const std::atomic<bool>* cancel = nullptr;  // optional
    uint64_t max_read_bytes_per_second = 0;     // 0 = unthrottled
    // Called on the job's thread after each counted chunk (to log a line
    // when ByteProgress::LogDue says so).
    std::function<void()> on_progress;
  };

  ProgressFileSystem(FileSystem* base, Options options);

  Status CreateNew(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status OpenForAppend(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status OpenForRead(const std::string& path, std::unique_ptr<SequentialFile>* out) override;
  Status Rename(const std::string& from, const std::string& to) override {
    return base_->Rename(from, to);
  }
  Status SyncDirectory(const std::string& dir) override { return base_->SyncDirectory(dir); }
  Status Remove(const std::string& path) override { return base_->Remove(path); }
  Status Truncate(const std::string& path, uint64_t size) override {
    return base_->Truncate(path, size);
  }
  Status FileSize(const std::string& path, uint64_t* size) override {
    return base_->FileSize(path, size);
  }
  bool Exists(const std::string& path) override { return base_->Exists(path); }
  Status ListDirectory(const std::string& dir, std::vector<std::string>* names) override {
    return base_->ListDirectory(dir, names);
  }

  // One chunk of `bytes` done: counts it, throttles, reports; an error if
  // the job was cancelled. Used by the wrapped files.
  Status Count(uint64_t bytes);
  const Options& options() const { return options_; }

 private:
  FileSystem* const base_;
  const Options options_;
  const int64_t start_ms_;
  uint64_t throttled_bytes_ = 0;  // since start_ms_, for the test hook
};

}  // namespace bloomgate
