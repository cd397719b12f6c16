#include "server/net/input_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace bloomgate {
namespace {

constexpr size_t kPageBytes = 4096;

size_t RoundUpToPage(size_t bytes) { return (bytes + kPageBytes - 1) & ~(kPageBytes - 1); }

}  // namespace

// Heap bytes below InputBuffer::kMappedBytes, an anonymous mapping from it on.
// Neither is initialised by us: only bytes a read wrote are ever looked at.
class InputBuffer::Storage {
 public:
  // Null if the memory could not be had.
  static std::unique_ptr<Storage> Make(size_t capacity) {
    if (capacity < kMappedBytes) {
      char* data = new (std::nothrow) char[capacity];
      if (data == nullptr) return nullptr;
      auto storage = std::unique_ptr<Storage>(new (std::nothrow) Storage(data, capacity, false));
      if (storage == nullptr) delete[] data;
      return storage;
    }
    const size_t length = RoundUpToPage(capacity);
    void* data = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) return nullptr;
    auto storage = std::unique_ptr<Storage>(
        new (std::nothrow) Storage(static_cast<char*>(data), length, true));
    if (storage == nullptr) munmap(data, length);
    return storage;
  }

  ~Storage() {
    if (mapped_) {
      munmap(data_, capacity_);
    } else {
      delete[] data_;
    }
  }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  char* data() const { return data_; }
  size_t capacity() const { return capacity_; }
  bool mapped() const { return mapped_; }

  // A mapping grows in place or moves by its page tables: no byte is copied
  // and no new page touched. False if the kernel refused (unchanged then).
  bool GrowMapping(size_t capacity) {
    const size_t length = RoundUpToPage(capacity);
    void* moved = mremap(data_, capacity_, length, MREMAP_MAYMOVE);
    if (moved == MAP_FAILED) return false;
    data_ = static_cast<char*>(moved);
    capacity_ = length;
    return true;
  }

 private:
  Storage(char* data, size_t capacity, bool mapped)
      : data_(data), capacity_(capacity), mapped_(mapped) {}

  char* data_;
  size_t capacity_;
  bool mapped_;
};

InputBuffer::InputBuffer() = default;
InputBuffer::~InputBuffer() = default;

std::string_view InputBuffer::unread() const {
  if (storage_ == nullptr) return {};
  return {storage_->data() + begin_, end_ - begin_};
}

size_t InputBuffer::capacity() const { return storage_ == nullptr ? 0 : storage_->capacity(); }

char* InputBuffer::free_begin() { return storage_->data() + end_; }

size_t InputBuffer::free_size() const { return capacity() - end_; }

bool InputBuffer::MakeRoom(size_t min_free, size_t enough) {
  const size_t unread = end_ - begin_;
  const size_t wanted = unread + min_free;
  const size_t capacity = this->capacity();
  if (capacity - begin_ >= wanted) return true;
  // Moving few bytes to the front is cheaper than growing; moving many (a
  // big argument half arrived after a consumed command) would be the copy
  // this buffer exists to avoid.
  if (begin_ > 0 && unread <= kMappedBytes) {
    std::memmove(storage_->data(), storage_->data() + begin_, unread);
    begin_ = 0;
    end_ = unread;
    if (capacity >= wanted) return true;
  }
  // Doubling keeps the heap copies at O(1) a byte and the remaps few (eight
  // from 1 MiB to 256 MiB); the command's known need caps it.
  size_t target = std::max(begin_ + wanted, capacity * 2);
  if (enough != 0) target = std::max(begin_ + wanted, std::min(target, begin_ + enough));
  if (storage_ != nullptr && storage_->mapped()) return storage_->GrowMapping(target);
  // From the heap, which holds under kMappedBytes: at most that is copied.
  std::unique_ptr<Storage> grown = Storage::Make(target);
  if (grown == nullptr) return false;
  if (unread > 0) std::memcpy(grown->data(), storage_->data() + begin_, unread);
  storage_ = std::move(grown);
  begin_ = 0;
  end_ = unread;
  return true;
}

std::shared_ptr<InputBuffer::Storage> InputBuffer::ReleaseIfIdle(size_t keep_up_to, size_t fresh) {
  if (begin_ != end_) return nullptr;
  begin_ = end_ = 0;
  if (capacity() <= keep_up_to) return nullptr;
  std::unique_ptr<Storage> replacement = Storage::Make(fresh);
  if (replacement == nullptr) return nullptr;  // keeps the big one; no worse
  std::swap(storage_, replacement);
  return std::shared_ptr<Storage>(std::move(replacement));
}

std::shared_ptr<InputBuffer::Storage> InputBuffer::Release() {
  begin_ = end_ = 0;
  return std::shared_ptr<Storage>(std::move(storage_));
}

}  // namespace bloomgate
