// A FileSystem for tests that passes every call to a real one (usually
// DefaultFileSystem()) except those it is told to fail:
//
//   FaultFileSystem fs(DefaultFileSystem());
//   fs.FailNth(FaultOp::kSync, 1, "Input/output error");  // the first fsync fails
//   fs.SetDiskFullAfter(4096);  // appends stop after 4096 bytes, all files together
//
// An injected failure does nothing on the real file system (the rename does
// not happen, the fsync is not done) and returns the message the real one
// would: "<step> <path>: <error text>", with PosixFileSystem's step names.
// Disk full is the one partial failure: the Append that crosses the limit
// writes the bytes that still fit, then fails with "No space left on device",
// as a real full disk does.
//
// Calls are counted per operation (calls()), whether or not they failed, and
// every path given to CreateNew is kept (created_paths()). Thread-safe; the
// files it hands out must not outlive it.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "persistence/file_system.h"
#include "persistence/status.h"

namespace bloomgate::test_support {

enum class FaultOp {
  kCreateNew,
  kOpenForAppend,
  kOpenForRead,
  kAppend,  // WritableFile::Append
  kSync,    // WritableFile::Sync
  kClose,   // WritableFile::Close
  kRead,    // SequentialFile::Read
  kRename,
  kSyncDirectory,
  kRemove,
  kTruncate,
};
inline constexpr size_t kFaultOpCount = 11;

inline const char* StepName(FaultOp op) {
  switch (op) {
    case FaultOp::kCreateNew:
      return "create";
    case FaultOp::kOpenForAppend:
      return "open";
    case FaultOp::kOpenForRead:
      return "open";
    case FaultOp::kAppend:
      return "write";
    case FaultOp::kSync:
      return "fsync";
    case FaultOp::kClose:
      return "close";
    case FaultOp::kRead:
      return "read";
    case FaultOp::kRename:
      return "rename";
    case FaultOp::kSyncDirectory:
      return "fsync directory";
    case FaultOp::kRemove:
      return "remove";
    case FaultOp::kTruncate:
      return "truncate";
  }
  return "unknown";
}

inline constexpr std::string_view kNoSpaceText = "No space left on device";

class FaultFileSystem : public FileSystem {
 public:
  explicit FaultFileSystem(FileSystem* base) : base_(base) {}

  // Call number `n` of `op` fails with `error_text`, counting from 1 since
  // construction (not since this call). Several faults may be armed.
  void FailNth(FaultOp op, uint64_t n, std::string error_text) {
    std::lock_guard lock(mutex_);
    faults_[{op, n}] = std::move(error_text);
  }

  // Runs `hook` at call number `n` of `op` (counted as FailNth counts),
  // before the call goes on: a test pauses a save at a chosen step.
  void BeforeNth(FaultOp op, uint64_t n, std::function<void()> hook) {
    std::lock_guard lock(mutex_);
    hooks_[{op, n}] = std::move(hook);
  }

  // Appends fail once `limit` bytes in all have been appended through this
  // file system: the crossing Append writes what fits, then it and every
  // later Append fail with kNoSpaceText.
  void SetDiskFullAfter(uint64_t limit) {
    std::lock_guard lock(mutex_);
    disk_limit_ = limit;
    has_disk_limit_ = true;
  }

  uint64_t calls(FaultOp op) const {
    std::lock_guard lock(mutex_);
    return calls_[static_cast<size_t>(op)];
  }
  uint64_t bytes_appended() const {
    std::lock_guard lock(mutex_);
    return bytes_appended_;
  }
  std::vector<std::string> created_paths() const {
    std::lock_guard lock(mutex_);
    return created_paths_;
  }

  Status CreateNew(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    {
      std::lock_guard lock(mutex_);
      created_paths_.push_back(path);
    }
    if (Status injected = Count(FaultOp::kCreateNew, path); !injected.ok()) return injected;
    return Wrap(path, base_->CreateNew(path, out), out);
  }
  Status OpenForAppend(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    if (Status injected = Count(FaultOp::kOpenForAppend, path); !injected.ok()) return injected;
    return Wrap(path, base_->OpenForAppend(path, out), out);
  }
  Status OpenForRead(const std::string& path, std::unique_ptr<SequentialFile>* out) override {
    if (Status injected = Count(FaultOp::kOpenForRead, path); !injected.ok()) return injected;
    Status opened = base_->OpenForRead(path, out);
    if (opened.ok()) *out = std::make_unique<ReadFile>(this, path, std::move(*out));
    return opened;
  }
  Status Rename(const std::string& from, const std::string& to) override {
    if (Status injected = Count(FaultOp::kRename, from + " to " + to); !injected.ok()) {
      return injected;
    }
    return base_->Rename(from, to);
  }
  Status SyncDirectory(const std::string& dir) override {
    if (Status injected = Count(FaultOp::kSyncDirectory, dir); !injected.ok()) return injected;
    return base_->SyncDirectory(dir);
  }
  Status Remove(const std::string& path) override {
    if (Status injected = Count(FaultOp::kRemove, path); !injected.ok()) return injected;
    return base_->Remove(path);
  }
  Status Truncate(const std::string& path, uint64_t size) override {
    if (Status injected = Count(FaultOp::kTruncate, path); !injected.ok()) return injected;
    return base_->Truncate(path, size);
  }
  Status FileSize(const std::string& path, uint64_t* size) override {
    return base_->FileSize(path, size);
  }
  bool Exists(const std::string& path) override { return base_->Exists(path); }
  Status ListDirectory(const std::string& dir, std::vector<std::string>* names) override {
    return base_->ListDirectory(dir, names);
  }

 private:
  class WriteFile : public WritableFile {
   public:
    WriteFile(FaultFileSystem* fs, std::string path, std::unique_ptr<WritableFile> base)
        : fs_(fs), path_(std::move(path)), base_(std::move(base)) {}
    Status Append(std::string_view data) override {
      if (Status injected = fs_->Count(FaultOp::kAppend, path_); !injected.ok()) return injected;
      const uint64_t allowed = fs_->TakeDiskSpace(data.size());
      if (allowed < data.size()) {
        Status partial = base_->Append(data.substr(0, allowed));
        if (!partial.ok()) return partial;
        return Status::Error(std::string("write ") + path_ + ": " + std::string(kNoSpaceText));
      }
      return base_->Append(data);
    }
    Status Sync() override {
      if (Status injected = fs_->Count(FaultOp::kSync, path_); !injected.ok()) return injected;
      return base_->Sync();
    }
    Status Close() override {
      if (Status injected = fs_->Count(FaultOp::kClose, path_); !injected.ok()) {
        (void)base_->Close();  // a failed close(2) still releases the descriptor
        return injected;
      }
      return base_->Close();
    }

   private:
    FaultFileSystem* fs_;
    std::string path_;
    std::unique_ptr<WritableFile> base_;
  };

  class ReadFile : public SequentialFile {
   public:
    ReadFile(FaultFileSystem* fs, std::string path, std::unique_ptr<SequentialFile> base)
        : fs_(fs), path_(std::move(path)), base_(std::move(base)) {}
    Status Read(size_t n, std::string* out) override {
      if (Status injected = fs_->Count(FaultOp::kRead, path_); !injected.ok()) {
        out->clear();
        return injected;
      }
      return base_->Read(n, out);
    }

   private:
    FaultFileSystem* fs_;
    std::string path_;
    std::unique_ptr<SequentialFile> base_;
  };

  // Counts a call of `op`; an error if this call is armed to fail.
  Status Count(FaultOp op, const std::string& subject) {
    std::function<void()> hook;
    Status result = Status::Ok();
    {
      std::lock_guard lock(mutex_);
      const uint64_t n = ++calls_[static_cast<size_t>(op)];
      if (auto found = hooks_.find({op, n}); found != hooks_.end()) {
        hook = std::move(found->second);
        hooks_.erase(found);
      }
      auto armed = faults_.find({op, n});
      if (armed != faults_.end()) {
        result = Status::Error(std::string(StepName(op)) + " " + subject + ": " + armed->second);
      }
    }
    if (hook) hook();  // unlocked: it may wait for other threads' file calls
    return result;
  }

  // How many of `want` bytes still fit before the disk is full.
  uint64_t TakeDiskSpace(uint64_t want) {
    std::lock_guard lock(mutex_);
    uint64_t allowed = want;
    if (has_disk_limit_) {
      const uint64_t left = disk_limit_ > bytes_appended_ ? disk_limit_ - bytes_appended_ : 0;
      allowed = want < left ? want : left;
    }
    bytes_appended_ += allowed;
    return allowed;
  }

  Status Wrap(const std::string& path, Status opened, std::unique_ptr<WritableFile>* out) {
    if (opened.ok()) *out = std::make_unique<WriteFile>(this, path, std::move(*out));
    return opened;
  }

  FileSystem* const base_;
  mutable std::mutex mutex_;  // guards everything below
  std::array<uint64_t, kFaultOpCount> calls_{};
  std::map<std::pair<FaultOp, uint64_t>, std::string> faults_;
  std::map<std::pair<FaultOp, uint64_t>, std::function<void()>> hooks_;
  uint64_t disk_limit_ = 0;
  bool has_disk_limit_ = false;
  uint64_t bytes_appended_ = 0;
  std::vector<std::string> created_paths_;
};

}  // namespace bloomgate::test_support
