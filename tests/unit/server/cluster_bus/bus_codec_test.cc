#include "server/cluster_bus/bus_codec.h"

#include <gtest/gtest.h>

#include <string>

#include "persistence/byte_io.h"
#include "persistence/crc64_jones.h"

namespace bloomgate {
namespace {

const std::string kIdA(40, 'a');
const std::string kIdB = "0123456789abcdef0123456789abcdef01234567";

BusMessage SamplePing() {
  BusMessage m;
  m.type = BusMessageType::kPing;
  m.sender_id = kIdA;
  m.sender_ip = "127.0.0.1";
  m.port = 7000;
  m.cport = 17000;
  m.flags = kBusFlagMaster;
  m.current_epoch = 7;
  m.config_epoch = 3;
  m.repl_offset = 123456789;
  for (int slot = 0; slot <= 5460; ++slot) m.slots.set(slot);
  m.slots.set(9000);
  m.gossip.push_back({kIdB, "::1", 7001, 17001, kBusFlagMaster | kBusFlagPFail, 0, 1700000000});
  return m;
}

std::string Encode(const BusMessage& m) {
  std::string out;
  EncodeBusMessage(m, &out);
  return out;
}

// Rewrites the checksum after a test changed header or body bytes, so the
// decoder's other checks are what refuse the message.
void Reseal(std::string* bytes) {
  const uint64_t crc =
      Crc64Jones(Crc64Jones(0, std::string_view(*bytes).substr(0, 12)), bytes->substr(20));
  std::string sum;
  ByteWriter(&sum).PutU64(crc);
  bytes->replace(12, 8, sum);
}

BusDecodeStatus Decode(const std::string& bytes, BusMessage* m = nullptr) {
  BusMessage scratch;
  size_t consumed = 0;
  return DecodeBusMessage(bytes, m ? m : &scratch, &consumed);
}

TEST(BusCodec, RoundTripsEveryType) {
  for (BusMessageType type :
       {BusMessageType::kPing, BusMessageType::kPong, BusMessageType::kMeet,
        BusMessageType::kUpdate, BusMessageType::kAuthRequest, BusMessageType::kAuthAck,
        BusMessageType::kMfStart}) {
    BusMessage m = SamplePing();
    m.type = type;
    if (!BusTypeHasGossip(type)) m.gossip.clear();
    if (type == BusMessageType::kAuthRequest) m.message_flags = kBusMessageForceAck;
    if (type == BusMessageType::kUpdate) {
      m.gossip.clear();
      m.update.id = kIdB;
      m.update.config_epoch = 9;
      m.update.slots.set(16383);
    }
    const std::string bytes = Encode(m);
    BusMessage back;
    size_t consumed = 0;
    ASSERT_EQ(DecodeBusMessage(bytes + "trailing", &back, &consumed), BusDecodeStatus::kOk)
        << ToString(type);
    EXPECT_EQ(consumed, bytes.size());
    EXPECT_EQ(back, m);
    EXPECT_EQ(Encode(back), bytes);
  }
}

// Pins the header's bytes: a change of the format must be deliberate.
TEST(BusCodec, HeaderBytesArePinned) {
  BusMessage m = SamplePing();
  m.type = BusMessageType::kPong;
  const std::string bytes = Encode(m);
  EXPECT_EQ(bytes.substr(0, 4), "BGCB");
  EXPECT_EQ(bytes.substr(4, 2), std::string("\x01\x00", 2));  // version 1
  EXPECT_EQ(bytes.substr(6, 2), std::string("\x01\x00", 2));  // PONG
  // sender 40 + 1+9 + 2+2+2 + 1+0 + 8+8 = 73; slots 2 + 2 ranges x 4 = 10;
  // gossip 2 + (40 + 1+3 + 2+2+2 + 4+4) = 60; the replication offset 8;
  // each field 6 bytes of tag+length.
  const uint32_t body = (6 + 73) + (6 + 10) + (6 + 60) + (6 + 8);
  EXPECT_EQ(bytes.size(), kBusHeaderBytes + body);
  EXPECT_EQ(bytes.substr(8, 4), std::string("\xaf\x00\x00\x00", 4));
}

TEST(BusCodec, AnEmptySlotSetIsZeroRanges) {
  BusMessage m = SamplePing();
  m.slots.reset();
  BusMessage back;
  ASSERT_EQ(Decode(Encode(m), &back), BusDecodeStatus::kOk);
  EXPECT_TRUE(back.slots.none());
}

TEST(BusCodec, EveryOtherSlotIsTheMostRanges) {
  BusMessage m = SamplePing();
  m.slots.reset();
  for (int slot = 0; slot < kBusSlotCount; slot += 2) m.slots.set(slot);
  BusMessage back;
  ASSERT_EQ(Decode(Encode(m), &back), BusDecodeStatus::kOk);
  EXPECT_EQ(back.slots, m.slots);
}

TEST(BusCodec, EveryPrefixNeedsMore) {
  const std::string bytes = Encode(SamplePing());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(Decode(bytes.substr(0, n)), BusDecodeStatus::kNeedMore) << n;
  }
}

TEST(BusCodec, RefusesAForeignMagicAtItsFirstByte) {
  EXPECT_EQ(Decode("*"), BusDecodeStatus::kBadMagic);  // a RESP client
  EXPECT_EQ(Decode("RCmb"), BusDecodeStatus::kBadMagic);  // Redis's own bus
  std::string bytes = Encode(SamplePing());
  bytes[3] = 'X';
  EXPECT_EQ(Decode(bytes), BusDecodeStatus::kBadMagic);
}

TEST(BusCodec, RefusesAnotherVersion) {
  for (char version : {'\x00', '\x02', '\xff'}) {
    std::string bytes = Encode(SamplePing());
    bytes[4] = version;
    Reseal(&bytes);
    EXPECT_EQ(Decode(bytes), BusDecodeStatus::kUnsupportedVersion);
  }
}

TEST(BusCodec, RefusesAnUnknownType) {
  std::string bytes = Encode(SamplePing());
  bytes[6] = '\x07';
  Reseal(&bytes);
  EXPECT_EQ(Decode(bytes), BusDecodeStatus::kUnknownType);
}

TEST(BusCodec, RefusesAnOversizedBodyFromTheHeaderAlone) {
  std::string header = Encode(SamplePing()).substr(0, kBusHeaderBytes);
  std::string length;
  ByteWriter(&length).PutU32(kBusMaxBodyBytes + 1);
  header.replace(8, 4, length);
  EXPECT_EQ(Decode(header), BusDecodeStatus::kOversized);
}

TEST(BusCodec, RefusesAFlippedBitAnywhere) {
  const std::string bytes = Encode(SamplePing());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] ^= 0x10;
    EXPECT_NE(Decode(bad), BusDecodeStatus::kOk) << i;
  }
}

// Builds a body from raw fields and seals it with a valid header.
std::string Message(BusMessageType type, const std::string& body) {
  std::string out;
  ByteWriter w(&out);
  w.PutBytes("BGCB");
  w.PutU16(1);
  w.PutU16(static_cast<uint16_t>(type));
  w.PutU32(static_cast<uint32_t>(body.size()));
  w.PutU64(0);
  out += body;
  Reseal(&out);
  return out;
}

std::string Field(uint16_t tag, const std::string& value) {
  std::string out;
  ByteWriter w(&out);
  w.PutU16(tag);
  w.PutString(value);
  return out;
}

// The fields of SamplePing's body, cut apart.
struct Fields {
  std::string sender, slots, gossip;
};
Fields SampleFields() {
  const std::string bytes = Encode(SamplePing());
  ByteReader r(std::string_view(bytes).substr(kBusHeaderBytes));
  Fields f;
  for (std::string* field : {&f.sender, &f.slots, &f.gossip}) {
    uint16_t tag = 0;
    std::string_view value;
    r.GetU16(&tag);
    r.GetString(&value);
    field->assign(value);
  }
  return f;
}

TEST(BusCodec, SkipsAnUnknownOptionalFieldOnly) {
  const Fields f = SampleFields();
  const std::string base = Field(1, f.sender) + Field(2, f.slots) + Field(3, f.gossip);
  EXPECT_EQ(Decode(Message(BusMessageType::kPing, base + Field(0x8fff, "later"))),
            BusDecodeStatus::kOk);
  EXPECT_EQ(Decode(Message(BusMessageType::kPing, base + Field(5, "later"))),
            BusDecodeStatus::kMalformed);
}

TEST(BusCodec, ReadsTheReplicationOffsetAndZeroWithoutIt) {
  const Fields f = SampleFields();
  const std::string base = Field(1, f.sender) + Field(2, f.slots) + Field(3, f.gossip);
  std::string offset;
  ByteWriter(&offset).PutU64(4242);
  BusMessage m;
  ASSERT_EQ(Decode(Message(BusMessageType::kPing, base + Field(0x8005, offset)), &m),
            BusDecodeStatus::kOk);
  EXPECT_EQ(m.repl_offset, 4242u);
  // A peer that does not send it: 0, and 0 is sent as no field at all.
  ASSERT_EQ(Decode(Message(BusMessageType::kPing, base), &m), BusDecodeStatus::kOk);
  EXPECT_EQ(m.repl_offset, 0u);
  EXPECT_EQ(Encode(m), Message(BusMessageType::kPing, base));
  // Twice, or not eight bytes: refused.
  EXPECT_EQ(Decode(Message(BusMessageType::kPing,
                           base + Field(0x8005, offset) + Field(0x8005, offset))),
            BusDecodeStatus::kMalformed);
  EXPECT_EQ(Decode(Message(BusMessageType::kPing, base + Field(0x8005, "1234567"))),
            BusDecodeStatus::kMalformed);
}

TEST(BusCodec, CarriesAFailAboutANode) {
  BusMessage m = SamplePing();
  m.type = BusMessageType::kPong;
  m.fail_about = kIdB;
  BusMessage back;
  ASSERT_EQ(Decode(Encode(m), &back), BusDecodeStatus::kOk);
  EXPECT_EQ(back.fail_about, kIdB);
  const Fields f = SampleFields();
  const std::string base = Field(1, f.sender) + Field(2, f.slots) + Field(3, f.gossip);
  EXPECT_EQ(Decode(Message(BusMessageType::kPong, base + Field(0x8006, "not an id"))),
            BusDecodeStatus::kMalformed);
}

// AUTH_REQUEST, AUTH_ACK and MFSTART are a header only: sender and
// slots, as Redis's carry no gossip.
TEST(BusCodec, AuthMessagesAreAHeaderOnly) {
  const Fields f = SampleFields();
  for (BusMessageType type :
       {BusMessageType::kAuthRequest, BusMessageType::kAuthAck, BusMessageType::kMfStart}) {
    BusMessage m;
    ASSERT_EQ(Decode(Message(type, Field(1, f.sender) + Field(2, f.slots)), &m),
              BusDecodeStatus::kOk);
    EXPECT_EQ(m.type, type);
    EXPECT_TRUE(m.gossip.empty());
    EXPECT_EQ(Decode(Message(type, Field(1, f.sender) + Field(2, f.slots) + Field(3, f.gossip))),
              BusDecodeStatus::kMalformed);
    BusMessage update = SamplePing();
    update.type = BusMessageType::kUpdate;
    update.gossip.clear();
    update.update.id = kIdB;
    const std::string update_bytes = Encode(update);
    ByteReader r(std::string_view(update_bytes).substr(kBusHeaderBytes));
    std::string update_field;
    for (int i = 0; i < 3; ++i) {
      uint16_t tag = 0;
      std::string_view value;
      r.GetU16(&tag);
      r.GetString(&value);
      if (tag == 4) update_field.assign(value);
    }
    ASSERT_FALSE(update_field.empty());
    EXPECT_EQ(Decode(Message(type, Field(1, f.sender) + Field(2, f.slots) +
                                       Field(4, update_field))),
              BusDecodeStatus::kMalformed);
    EXPECT_EQ(Decode(Message(type, Field(1, f.sender))), BusDecodeStatus::kMalformed);
  }
}

TEST(BusCodec, CarriesMessageFlagsAndZeroWithoutThem) {
  const Fields f = SampleFields();
  const std::string base = Field(1, f.sender) + Field(2, f.slots);
  std::string flags;
  ByteWriter(&flags).PutU16(kBusMessageForceAck | kBusMessagePaused);
  BusMessage m;
  ASSERT_EQ(Decode(Message(BusMessageType::kAuthRequest, base + Field(0x8007, flags)), &m),
            BusDecodeStatus::kOk);
  EXPECT_EQ(m.message_flags, kBusMessageForceAck | kBusMessagePaused);
  EXPECT_EQ(Encode(m), Message(BusMessageType::kAuthRequest, base + Field(0x8007, flags)));
  // A later version's bit is kept as it came (and means nothing here).
  std::string later;
  ByteWriter(&later).PutU16(0x8000);
  ASSERT_EQ(Decode(Message(BusMessageType::kAuthRequest, base + Field(0x8007, later)), &m),
            BusDecodeStatus::kOk);
  EXPECT_EQ(m.message_flags, 0x8000);
  // On any type: a PING of a paused master.
  BusMessage paused = SamplePing();
  paused.message_flags = kBusMessagePaused;
  ASSERT_EQ(Decode(Encode(paused), &m), BusDecodeStatus::kOk);
  EXPECT_EQ(m, paused);
  // Absent: 0, and 0 is sent as no field.
  ASSERT_EQ(Decode(Message(BusMessageType::kAuthAck, base), &m), BusDecodeStatus::kOk);
  EXPECT_EQ(m.message_flags, 0);
  EXPECT_EQ(Encode(m), Message(BusMessageType::kAuthAck, base));
  // Twice, or not two bytes: refused.
  EXPECT_EQ(Decode(Message(BusMessageType::kAuthRequest,
                           base + Field(0x8007, flags) + Field(0x8007, flags))),
            BusDecodeStatus::kMalformed);
  EXPECT_EQ(Decode(Message(BusMessageType::kAuthRequest, base + Field(0x8007, "\x01"))),
            BusDecodeStatus::kMalformed);
  EXPECT_EQ(Decode(Message(BusMessageType::kAuthRequest,
                           base + Field(0x8007, std::string("\x01\x00\x00", 3)))),
            BusDecodeStatus::kMalformed);
}

TEST(BusCodec, RefusesMissingRepeatedOrMisplacedFields) {
  const Fields f = SampleFields();
  const auto ping = [](const std::string& body) { return Message(BusMessageType::kPing, body); };
  EXPECT_EQ(Decode(ping(Field(1, f.sender) + Field(2, f.slots))), BusDecodeStatus::kMalformed);
  EXPECT_EQ(Decode(ping(Field(2, f.slots) + Field(3, f.gossip))), BusDecodeStatus::kMalformed);
  EXPECT_EQ(Decode(ping(Field(1, f.sender) + Field(1, f.sender) + Field(2, f.slots) +
                        Field(3, f.gossip))),
            BusDecodeStatus::kMalformed);
  // An UPDATE carries no gossip, a PING no update.
  EXPECT_EQ(Decode(Message(BusMessageType::kUpdate,
                           Field(1, f.sender) + Field(2, f.slots) + Field(3, f.gossip))),
            BusDecodeStatus::kMalformed);
  // A field's length beyond the body.
  std::string truncated = Field(1, f.sender) + Field(2, f.slots) + Field(3, f.gossip);
  truncated.resize(truncated.size() - 1);
  EXPECT_EQ(Decode(ping(truncated)), BusDecodeStatus::kMalformed);
}

TEST(BusCodec, RefusesBadValuesInTheSender) {
  const Fields f = SampleFields();
  const auto with_sender = [&](std::string sender) {
    return Decode(Message(BusMessageType::kPing,
                          Field(1, sender) + Field(2, f.slots) + Field(3, f.gossip)));
  };
  EXPECT_EQ(with_sender(f.sender), BusDecodeStatus::kOk);
  std::string upper_id = f.sender;
  upper_id[0] = 'A';
  EXPECT_EQ(with_sender(upper_id), BusDecodeStatus::kMalformed);
  std::string space_in_ip = f.sender;
  space_in_ip[41] = ' ';
  EXPECT_EQ(with_sender(space_in_ip), BusDecodeStatus::kMalformed);
  EXPECT_EQ(with_sender(f.sender + "x"), BusDecodeStatus::kMalformed);
  std::string zero_port = f.sender;
  zero_port[50] = zero_port[51] = '\0';
  EXPECT_EQ(with_sender(zero_port), BusDecodeStatus::kMalformed);
  std::string unknown_flag = f.sender;
  unknown_flag[55] = '\x80';
  EXPECT_EQ(with_sender(unknown_flag), BusDecodeStatus::kMalformed);
}

TEST(BusCodec, RefusesNonCanonicalRanges) {
  const Fields f = SampleFields();
  const auto with_ranges = [&](std::initializer_list<std::pair<int, int>> ranges) {
    std::string slots;
    ByteWriter w(&slots);
    w.PutU16(static_cast<uint16_t>(ranges.size()));
    for (auto [first, last] : ranges) {
      w.PutU16(static_cast<uint16_t>(first));
      w.PutU16(static_cast<uint16_t>(last));
    }
    return Decode(Message(BusMessageType::kPing,
                          Field(1, f.sender) + Field(2, slots) + Field(3, f.gossip)));
  };
  EXPECT_EQ(with_ranges({{0, 10}, {12, 16383}}), BusDecodeStatus::kOk);
  EXPECT_EQ(with_ranges({{0, 10}, {11, 20}}), BusDecodeStatus::kMalformed);   // touching
  EXPECT_EQ(with_ranges({{5, 10}, {0, 2}}), BusDecodeStatus::kMalformed);     // descending
  EXPECT_EQ(with_ranges({{10, 5}}), BusDecodeStatus::kMalformed);             // reversed
  EXPECT_EQ(with_ranges({{0, 16384}}), BusDecodeStatus::kMalformed);          // past the end
}

TEST(BusCodec, RefusesAGossipCountBeyondItsBytes) {
  const Fields f = SampleFields();
  std::string gossip = f.gossip;
  gossip[0] = '\xff';
  gossip[1] = '\xff';
  EXPECT_EQ(Decode(Message(BusMessageType::kPing,
                           Field(1, f.sender) + Field(2, f.slots) + Field(3, gossip))),
            BusDecodeStatus::kMalformed);
}

}  // namespace
}  // namespace bloomgate
