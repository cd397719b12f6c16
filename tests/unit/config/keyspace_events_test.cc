#include "config/keyspace_events.h"

#include <gtest/gtest.h>

namespace bloomgate {
namespace {

TEST(KeyspaceEvents, EmptyIsOff) {
  EXPECT_EQ(ParseKeyspaceEvents(""), 0u);
  EXPECT_EQ(KeyspaceEventsText(0), "");
}

TEST(KeyspaceEvents, AllClassesPrintAsAThenKAndE) {
  EXPECT_EQ(ParseKeyspaceEvents("KEA"), kNotifyAll | kNotifyKeyspace | kNotifyKeyevent);
  EXPECT_EQ(KeyspaceEventsText(*ParseKeyspaceEvents("g$lshzxetdKE")), "AKE");
  // m and n are outside A, as in Redis 7.0; n is kept after A (Redis 7.0
  // drops it from its text, so CONFIG REWRITE would lose it).
  EXPECT_EQ(KeyspaceEventsText(*ParseKeyspaceEvents("Amn")), "Anm");
}

TEST(KeyspaceEvents, ClassesPrintInRedisOrder) {
  EXPECT_EQ(KeyspaceEventsText(*ParseKeyspaceEvents("ExKg")), "gxKE");
  EXPECT_EQ(KeyspaceEventsText(*ParseKeyspaceEvents("Ed$")), "$dE");
}

TEST(KeyspaceEvents, UnknownLetterIsRefused) {
  EXPECT_FALSE(ParseKeyspaceEvents("KEq").has_value());
  EXPECT_FALSE(ParseKeyspaceEvents("a").has_value());  // letters are case-sensitive
}

}  // namespace
}  // namespace bloomgate
