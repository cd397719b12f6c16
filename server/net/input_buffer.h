// A connection's input: the bytes read and not yet consumed, contiguous, so
// the RESP parser can hand out arguments as views into them.
//
// Growing it never copies or touches more than about 1 MiB on the event loop.
// A std::vector doubled to fit one 256 MiB argument zero-filled and copied
// ~512 MiB on the loop, 1.3-2.0 s during which every other client of that
// loop waited. Here:
//  - storage under kMappedBytes comes from the heap, uninitialised;
//  - from kMappedBytes on it is an anonymous mapping whose pages the kernel
//    hands out zeroed as a read first writes them, and it doubles by
//    mremap, which moves page table entries instead of bytes;
//  - it still grows only with bytes that arrived, never with a length a
//    client merely declared (eight clients each declaring 400 MB and
//    sending 1 KB must not map 3.2 GB), but a declared length caps the last
//    doubling, so a 256 MiB argument does not map 512 MiB;
//  - unread bytes are moved to the front only when they are few (at most
//    kMappedBytes); a big unread tail keeps its offset and the buffer grows.
// Storage that grew past kMappedBytes is handed back by ReleaseIfIdle, so the
// caller can free it off the loop (munmap of 256 MiB of touched pages is
// ~20 ms).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace bloomgate {

class InputBuffer {
 public:
  static constexpr size_t kMappedBytes = size_t{1} << 20;

  // The storage itself, so a big one can be freed on another thread.
  class Storage;

  InputBuffer();
  ~InputBuffer();
  InputBuffer(const InputBuffer&) = delete;
  InputBuffer& operator=(const InputBuffer&) = delete;

  // The bytes read and not consumed yet; valid until MakeRoom or
  // ReleaseIfIdle.
  std::string_view unread() const;
  size_t unread_size() const { return end_ - begin_; }
  size_t capacity() const;
  void Consume(size_t bytes) { begin_ += bytes; }

  // Makes room to read at least `min_free` more bytes, doubling the storage
  // when it must grow, but not past `enough` unread bytes when that is given
  // (what the command being parsed is known to need). False if the storage
  // could not be had; the buffer is then unchanged.
  bool MakeRoom(size_t min_free, size_t enough = 0);
  // Where the next read goes, and how much it may take.
  char* free_begin();
  size_t free_size() const;
  // `bytes` were read into free_begin().
  void Commit(size_t bytes) { end_ += bytes; }

  // With nothing unread and storage above `keep_up_to` bytes: starts over
  // with `fresh` bytes of heap and returns the old storage, for the caller
  // to free where it likes. Else null.
  std::shared_ptr<Storage> ReleaseIfIdle(size_t keep_up_to, size_t fresh);
  // Drops what is unread and hands out the storage (the connection closed);
  // the buffer is left empty, with no storage.
  std::shared_ptr<Storage> Release();

 private:
  std::unique_ptr<Storage> storage_;
  size_t begin_ = 0;  // first byte not consumed
  size_t end_ = 0;    // one past the last byte read
};

}  // namespace bloomgate
