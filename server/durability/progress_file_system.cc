#include "server/durability/progress_file_system.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "server/base/clock.h"

namespace bloomgate {
namespace {

// Throttled reads are split into pieces this big, so progress moves
// smoothly even when the reader asks for a megabyte at a time.
constexpr size_t kThrottledPieceBytes = 16 << 10;

class CountingReadFile : public SequentialFile {
 public:
  CountingReadFile(std::unique_ptr<SequentialFile> base, ProgressFileSystem* fs)
      : base_(std::move(base)), fs_(fs) {}

  Status Read(size_t n, std::string* out) override {
    if (fs_->options().max_read_bytes_per_second == 0) {
      Status status = base_->Read(n, out);
      if (status.ok()) status = fs_->Count(out->size());
      return status;
    }
    // The contract: fewer than n only at the end of the file, so the pieces
    // are joined back into one answer.
    out->clear();
    std::string piece;
    while (out->size() < n) {
      Status status = base_->Read(std::min(kThrottledPieceBytes, n - out->size()), &piece);
      if (!status.ok()) return status;
      if (piece.empty()) break;
      out->append(piece);
      status = fs_->Count(piece.size());
      if (!status.ok()) return status;
    }
    return Status::Ok();
  }

 private:
  std::unique_ptr<SequentialFile> base_;
  ProgressFileSystem* fs_;
};

class CountingWriteFile : public WritableFile {
 public:
  CountingWriteFile(std::unique_ptr<WritableFile> base, ProgressFileSystem* fs)
      : base_(std::move(base)), fs_(fs) {}

  Status Append(std::string_view data) override {
    Status status = base_->Append(data);
    if (status.ok()) status = fs_->Count(data.size());
    return status;
  }
  Status Sync() override { return base_->Sync(); }
  Status Close() override { return base_->Close(); }

 private:
  std::unique_ptr<WritableFile> base_;
  ProgressFileSystem* fs_;
};

}  // namespace

ProgressFileSystem::ProgressFileSystem(FileSystem* base, Options options)
    : base_(base), options_(std::move(options)), start_ms_(NowMs()) {}

Status ProgressFileSystem::CreateNew(const std::string& path,
                                     std::unique_ptr<WritableFile>* out) {
  std::unique_ptr<WritableFile> file;
  Status status = base_->CreateNew(path, &file);
  if (status.ok()) *out = std::make_unique<CountingWriteFile>(std::move(file), this);
  return status;
}

Status ProgressFileSystem::OpenForAppend(const std::string& path,
                                         std::unique_ptr<WritableFile>* out) {
  // Appends to an existing file are the torn-tail repair, not the job's
  // stream: not counted.
  return base_->OpenForAppend(path, out);
}

Status ProgressFileSystem::OpenForRead(const std::string& path,
                                       std::unique_ptr<SequentialFile>* out) {
  std::unique_ptr<SequentialFile> file;
  Status status = base_->OpenForRead(path, &file);
  if (status.ok()) *out = std::make_unique<CountingReadFile>(std::move(file), this);
  return status;
}

Status ProgressFileSystem::Count(uint64_t bytes) {
  options_.progress->Add(bytes);
  if (options_.max_read_bytes_per_second > 0) {
    throttled_bytes_ += bytes;
    // Sleep until the bytes so far fit the rate since the start.
    const int64_t due_ms =
        start_ms_ + static_cast<int64_t>(throttled_bytes_ * 1000 /
                                         options_.max_read_bytes_per_second);
    const int64_t wait_ms = due_ms - NowMs();
    if (wait_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
  }
  if (options_.on_progress) options_.on_progress();
  if (options_.cancel != nullptr && options_.cancel->load(std::memory_order_acquire)) {
    return Status::Error("interrupted: the server is stopping");
  }
  return Status::Ok();
}

}  // namespace bloomgate
