// The replication backlog's ring and the diskless full sync's EOF framing,
// without sockets: a snapshot written through the stream adaptor and read
// back through the EOF reader in pieces of every size.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "persistence/snapshot_file.h"
#include "server/replication/backlog_ring.h"
#include "server/replication/eof_framing.h"
#include "server/replication/stream_file_system.h"

namespace bloomgate {
namespace {

std::string Bytes(char first, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(first + i % 50);
  return s;
}

TEST(BacklogRing, HoldsTheNewestBytesByOffset) {
  BacklogRing ring(10);
  ring.Reset(100);
  EXPECT_TRUE(ring.Holds(100));
  EXPECT_FALSE(ring.Holds(99));
  ASSERT_TRUE(ring.Append("abcd", 104));
  ASSERT_TRUE(ring.Append("efghij", 110));
  std::string out;
  ASSERT_TRUE(ring.CopyFrom(102, &out));
  EXPECT_EQ(out, "cdefghij");
  // Wraps: the oldest bytes go, the offsets stay.
  ASSERT_TRUE(ring.Append("klm", 113));
  EXPECT_EQ(ring.start(), 103u);
  EXPECT_EQ(ring.histlen(), 10u);
  EXPECT_FALSE(ring.Holds(102));
  out.clear();
  ASSERT_TRUE(ring.CopyFrom(103, &out));
  EXPECT_EQ(out, "defghijklm");
  out.clear();
  ASSERT_TRUE(ring.CopyFrom(113, &out));
  EXPECT_EQ(out, "");
  EXPECT_FALSE(ring.CopyFrom(114, &out));
}

TEST(BacklogRing, ARecordLargerThanTheRingEmptiesIt) {
  BacklogRing ring(8);
  ring.Reset(0);
  ASSERT_TRUE(ring.Append("abc", 3));
  EXPECT_FALSE(ring.Append("0123456789", 13));
  EXPECT_EQ(ring.histlen(), 0u);
  EXPECT_FALSE(ring.Holds(3)) << "a replica behind the big record needs a full sync";
  EXPECT_TRUE(ring.Holds(13));
  ASSERT_TRUE(ring.Append("xy", 15));
  std::string out;
  ASSERT_TRUE(ring.CopyFrom(13, &out));
  EXPECT_EQ(out, "xy");
}

TEST(BacklogRing, ResizeKeepsTheNewestBytes) {
  BacklogRing ring(16);
  ring.Reset(0);
  ASSERT_TRUE(ring.Append(Bytes('a', 12), 12));
  ring.Resize(5);
  EXPECT_EQ(ring.start(), 7u);
  std::string out;
  ASSERT_TRUE(ring.CopyFrom(7, &out));
  EXPECT_EQ(out, Bytes('a', 12).substr(7));
  ring.Resize(32);
  ASSERT_TRUE(ring.Append("Z", 13));
  out.clear();
  ASSERT_TRUE(ring.CopyFrom(7, &out));
  EXPECT_EQ(out, Bytes('a', 12).substr(7) + "Z");
}

TEST(BacklogRing, AGapResetsTheRing) {
  BacklogRing ring(16);
  ring.Reset(0);
  ASSERT_TRUE(ring.Append("abc", 3));
  ASSERT_TRUE(ring.Append("xyz", 10));  // 3..7 never came
  EXPECT_FALSE(ring.Holds(3));
  std::string out;
  ASSERT_TRUE(ring.CopyFrom(7, &out));
  EXPECT_EQ(out, "xyz");
}

TEST(EofFraming, PreambleRoundTrips) {
  const std::string mark = MakeEofMark();
  ASSERT_EQ(mark.size(), kEofMarkBytes);
  EXPECT_NE(mark, MakeEofMark());
  std::string line = EofPreamble(mark);
  ASSERT_EQ(line.substr(line.size() - 2), "\r\n");
  line.resize(line.size() - 2);
  EXPECT_EQ(ParseEofPreamble(line), mark);
  EXPECT_EQ(ParseEofPreamble("$1234"), "");
  EXPECT_EQ(ParseEofPreamble("$EOF:short"), "");
}

// Delivers `wire` to a reader `piece` bytes per receive.
std::string ReadAll(const std::string& mark, const std::string& wire, size_t piece,
                    size_t read_size, bool* ended) {
  size_t sent = 0;
  EofDelimitedReader reader(mark, [&](std::string* out) {
    if (sent == wire.size()) return Status::Error("the link closed");
    const size_t n = std::min(piece, wire.size() - sent);
    out->append(wire, sent, n);
    sent += n;
    return Status::Ok();
  });
  std::string payload, chunk;
  while (true) {
    Status status = reader.Read(read_size, &chunk);
    if (!status.ok()) break;
    if (chunk.empty()) break;
    payload += chunk;
  }
  *ended = reader.ended();
  EXPECT_EQ(reader.payload_bytes(), payload.size());
  return payload;
}

TEST(EofFraming, ThePayloadEndsAtTheMarkWhateverThePieces) {
  const std::string mark = MakeEofMark();
  for (size_t payload_size : {0u, 1u, 39u, 40u, 41u, 1000u}) {
    const std::string payload = Bytes('A', payload_size);
    for (size_t piece : {1u, 7u, 40u, 64u, 5000u}) {
      bool ended = false;
      EXPECT_EQ(ReadAll(mark, payload + mark, piece, 13, &ended), payload)
          << payload_size << " in pieces of " << piece;
      EXPECT_TRUE(ended);
    }
  }
}

TEST(EofFraming, ALinkThatBreaksBeforeTheMarkIsAnError) {
  const std::string mark = MakeEofMark();
  bool ended = true;
  const std::string payload = Bytes('A', 100);
  const std::string got = ReadAll(mark, payload + mark.substr(0, 20), 9, 16, &ended);
  EXPECT_FALSE(ended);
  EXPECT_LT(got.size(), payload.size() + 20);
}

TEST(EofFraming, ASnapshotStreamsThroughTheAdaptorsAndVerifies) {
  std::string wire;
  StreamFileSystem out([&wire](std::string_view bytes) {
    wire.append(bytes);
    return Status::Ok();
  }, nullptr);
  uint64_t written = 0;
  ASSERT_TRUE(WriteSnapshot(out, ".", "stream", {.created_ms = 7}, {}, &written).ok());
  ASSERT_EQ(written, wire.size());
  const std::string mark = MakeEofMark();
  for (bool damaged : {false, true}) {
    std::string sent = wire;
    if (damaged) sent[sent.size() / 2] ^= 0x40;
    sent += mark;
    size_t at = 0;
    EofDelimitedReader reader(mark, [&](std::string* piece) {
      if (at == sent.size()) return Status::Error("the link closed");
      const size_t n = std::min<size_t>(5, sent.size() - at);
      piece->append(sent, at, n);
      at += n;
      return Status::Ok();
    });
    StreamFileSystem in(nullptr, [&reader](size_t n, std::string* piece) {
      return reader.Read(n, piece);
    });
    SnapshotInfo info;
    std::vector<LoadedRecord> records;
    Status read = ReadSnapshot(in, "stream", FilterLimits{}, nullptr, &info, &records);
    EXPECT_EQ(read.ok(), !damaged) << read.message();
    if (!damaged) EXPECT_EQ(info.meta.created_ms, 7);
  }
}

}  // namespace
}  // namespace bloomgate
