// The cluster bus's decoder takes bytes from any peer that can reach the bus
// port: it must never crash, read out of bounds or allocate from a declared
// size, and what it accepts must be what the encoder would write.
//
// Input: byte 0, bit 0 set: the checksum (bytes 12..19) is recomputed before
// decoding, so mutations get past it to the field decoders; the rest is the
// stream. Checked on every accepted message: its re-encoding decodes to the
// same message and is no longer than the input (optional fields of a later
// version are dropped, nothing is added), and every strict prefix of it
// needs more bytes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "persistence/byte_io.h"
#include "persistence/crc64_jones.h"
#include "server/cluster_bus/bus_codec.h"
#include "tests/fuzz/fuzz_support.h"

namespace bloomgate::fuzz {
namespace {

void Reseal(std::string* bytes) {
  if (bytes->size() < kBusHeaderBytes) return;
  std::string_view view(*bytes);
  const uint64_t crc =
      Crc64Jones(Crc64Jones(0, view.substr(0, 12)), view.substr(kBusHeaderBytes));
  std::string sum;
  ByteWriter(&sum).PutU64(crc);
  bytes->replace(12, 8, sum);
}

}  // namespace
}  // namespace bloomgate::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bloomgate;
  using namespace bloomgate::fuzz;
  if (size == 0) return 0;
  std::string stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) Reseal(&stream);

  BusMessage message;
  size_t consumed = 0;
  if (DecodeBusMessage(stream, &message, &consumed) != BusDecodeStatus::kOk) return 0;
  FUZZ_CHECK(consumed >= kBusHeaderBytes && consumed <= stream.size(), "consumed %zu of %zu",
             consumed, stream.size());

  std::string again;
  EncodeBusMessage(message, &again);
  FUZZ_CHECK(again.size() <= consumed, "re-encoded %zu > %zu", again.size(), consumed);
  BusMessage back;
  size_t back_consumed = 0;
  FUZZ_CHECK(DecodeBusMessage(again, &back, &back_consumed) == BusDecodeStatus::kOk,
             "the re-encoding is refused");
  FUZZ_CHECK(back_consumed == again.size(), "consumed %zu of %zu", back_consumed, again.size());
  FUZZ_CHECK(back == message, "the re-encoding decodes to another message");
  for (size_t n = 0; n < again.size(); n += 7) {
    BusMessage scratch;
    FUZZ_CHECK(DecodeBusMessage(std::string_view(again).substr(0, n), &scratch, &back_consumed) ==
               BusDecodeStatus::kNeedMore,
               "a %zu-byte prefix does not need more", n);
  }
  return 0;
}
