#include "server/net/input_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "server/resp/resp_parser.h"

namespace bloomgate {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kReadSpace = 16 * 1024;

// Plays a socket: writes `text` into the buffer's free space.
void Read(InputBuffer& buffer, std::string_view text) {
  ASSERT_GE(buffer.free_size(), text.size());
  std::memcpy(buffer.free_begin(), text.data(), text.size());
  buffer.Commit(text.size());
}

TEST(InputBuffer, ADeclaredBulkIsNotAllocatedUpFrontAndCapsTheLastDoubling) {
  InputBuffer buffer;
  ASSERT_TRUE(buffer.MakeRoom(kReadSpace));
  const std::string header = "*2\r\n$4\r\nECHO\r\n$67108864\r\n";
  Read(buffer, header);
  RespParser parser;
  std::vector<std::string_view> args;
  size_t consumed = 0;
  ASSERT_EQ(parser.Parse(buffer.unread(), &args, &consumed), ParseStatus::kNeedMore);
  const uint64_t wanted = parser.bytes_wanted();
  EXPECT_EQ(wanted, header.size() + (64 * kMiB) + 2);
  const size_t enough = wanted + kReadSpace;
  // A claim maps nothing: only bytes that arrived make the buffer grow.
  ASSERT_TRUE(buffer.MakeRoom(kReadSpace, enough));
  EXPECT_LT(buffer.capacity(), kMiB);

  // The bulk arrives in 1 MiB reads, the buffer doubling (by remapping once
  // past 1 MiB) but never past what the command needs: 64 MiB + a header
  // is just past a power of two, so an uncapped last doubling would map
  // 128 MiB.
  const std::string chunk(kMiB, 'x');
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(buffer.MakeRoom(kMiB, enough));
    Read(buffer, chunk);
    ASSERT_LE(buffer.capacity(), enough + 4096);
  }
  ASSERT_TRUE(buffer.MakeRoom(kReadSpace, enough));
  Read(buffer, "\r\n");
  ASSERT_EQ(parser.Parse(buffer.unread(), &args, &consumed), ParseStatus::kCommand);
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args[1].size(), 64 * kMiB);
  EXPECT_EQ(args[1].find_first_not_of('x'), std::string_view::npos);
  EXPECT_EQ(parser.bytes_wanted(), 0u);
}

TEST(InputBuffer, GrowingByDoublingKeepsEveryByteAndAMappingGrowsInPlace) {
  InputBuffer buffer;
  ASSERT_TRUE(buffer.MakeRoom(kReadSpace));
  std::string sent;
  for (size_t i = 0; sent.size() < 8 * kMiB; ++i) {
    ASSERT_TRUE(buffer.MakeRoom(kReadSpace));
    const std::string piece(kReadSpace, static_cast<char>('a' + i % 26));
    Read(buffer, piece);
    sent += piece;
  }
  EXPECT_EQ(buffer.unread(), sent);
  EXPECT_GE(buffer.capacity(), sent.size());
}

TEST(InputBuffer, ManyUnreadBytesAreNotMovedToTheFront) {
  InputBuffer buffer;
  ASSERT_TRUE(buffer.MakeRoom(4 * kMiB));
  Read(buffer, std::string(kMiB / 2, 'c'));  // a consumed command
  buffer.Consume(kMiB / 2);
  const std::string big(3 * kMiB, 'b');  // a big argument half arrived
  Read(buffer, big);
  // Room for the rest of it: the mapping grows, the 3 MiB keep their place.
  ASSERT_TRUE(buffer.MakeRoom(64 * kMiB));
  EXPECT_EQ(buffer.unread(), big);
  EXPECT_GE(buffer.free_size(), 64 * kMiB);

  // Few unread bytes behind a consumed prefix do move to the front.
  buffer.Consume(big.size() - 10);
  const size_t capacity = buffer.capacity();
  ASSERT_TRUE(buffer.MakeRoom(buffer.free_size() + 1));
  EXPECT_EQ(buffer.unread(), std::string(10, 'b'));
  EXPECT_EQ(buffer.capacity(), capacity);
  EXPECT_EQ(buffer.free_size(), capacity - 10);
}

TEST(InputBuffer, BigStorageIsHandedBackOnlyWhenIdle) {
  InputBuffer buffer;
  ASSERT_TRUE(buffer.MakeRoom(32 * kMiB));
  Read(buffer, "PING\r\n");
  EXPECT_EQ(buffer.ReleaseIfIdle(kMiB, kReadSpace), nullptr);
  buffer.Consume(6);
  auto old = buffer.ReleaseIfIdle(kMiB, kReadSpace);
  EXPECT_NE(old, nullptr);
  EXPECT_EQ(buffer.capacity(), kReadSpace);
  EXPECT_EQ(buffer.unread_size(), 0u);
  // Small storage stays.
  EXPECT_EQ(buffer.ReleaseIfIdle(kMiB, kReadSpace), nullptr);
}

}  // namespace
}  // namespace bloomgate
