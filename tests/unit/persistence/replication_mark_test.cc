#include "persistence/replication_mark.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/unit/config/temp_dir.h"

namespace bloomgate {
namespace {

const ReplicationMark kMark{.replid = "0123456789abcdef0123456789abcdef01234567",
                            .offset = 123456789012,
                            .log_generation = 7};

TEST(ReplicationMark, RoundTripsThroughItsFileBesideTheSnapshot) {
  testutil::TempDir dir;
  const std::string path = dir.path().string();
  ASSERT_TRUE(WriteReplicationMark(*DefaultFileSystem(), path, "dump.bgs", kMark).ok());
  EXPECT_TRUE(DefaultFileSystem()->Exists(JoinPath(path, "dump.bgs.repl")));
  ReplicationMark read;
  bool found = false;
  ASSERT_TRUE(ReadReplicationMark(*DefaultFileSystem(), path, "dump.bgs", &read, &found).ok());
  EXPECT_TRUE(found);
  EXPECT_EQ(read, kMark);

  ASSERT_TRUE(RemoveReplicationMark(*DefaultFileSystem(), path, "dump.bgs").ok());
  ASSERT_TRUE(ReadReplicationMark(*DefaultFileSystem(), path, "dump.bgs", &read, &found).ok());
  EXPECT_FALSE(found);
  // Removing what is not there is no error.
  EXPECT_TRUE(RemoveReplicationMark(*DefaultFileSystem(), path, "dump.bgs").ok());
}

TEST(ReplicationMark, AnyChangedByteIsRefused) {
  const std::string text = EncodeReplicationMark(kMark);
  ReplicationMark read;
  ASSERT_EQ(DecodeReplicationMark(text, &read), "");
  for (size_t i = 0; i < text.size(); ++i) {
    std::string damaged = text;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x01);
    ReplicationMark untouched = kMark;
    EXPECT_NE(DecodeReplicationMark(damaged, &untouched), "") << "byte " << i;
    EXPECT_EQ(untouched, kMark) << "byte " << i;
  }
  EXPECT_NE(DecodeReplicationMark(text.substr(0, text.size() - 1), &read), "");
  EXPECT_NE(DecodeReplicationMark(text + "x", &read), "");
  EXPECT_NE(DecodeReplicationMark("", &read), "");
}

TEST(ReplicationMark, AnUnreadableFileIsAnErrorNotAMark) {
  testutil::TempDir dir;
  dir.WriteFile("dump.bgs.repl", "bloomgate-replication-mark 1\nreplid x\n");
  ReplicationMark read;
  bool found = false;
  Status status =
      ReadReplicationMark(*DefaultFileSystem(), dir.path().string(), "dump.bgs", &read, &found);
  EXPECT_FALSE(status.ok());
  EXPECT_FALSE(found);
}

}  // namespace
}  // namespace bloomgate
