#include "server/commands/bloom/bloom_options.h"

#include "filters/hash_seed.h"
#include "filters/limits.h"
#include "filters/windowed_bloom_filter.h"
#include "server/commands/errors.h"

namespace bloomgate {
namespace {

// RESERVE's counts: a negative number is out of range (RedisBloom reads
// them as signed integers and range-checks them); anything else that is not
// a number is `bad`.
uint64_t NextCount(ArgParser& parser, std::string_view bad, std::string_view out_of_range) {
  std::string_view text = parser.Next(bad);
  uint64_t value = 0;
  int64_t negative = 0;
  if (parser.failed() || ParseUint64(text, &value)) return value;
  parser.Fail(ParseInt64(text, &negative) ? out_of_range : bad);
  return 0;
}

uint32_t NextCounterBits(ArgParser& parser) {
  std::string_view text = parser.Next(errors::kBadCounterBits);
  if (!parser.failed() && text != "4" && text != "8") parser.Fail(errors::kBadCounterBits);
  return text == "8" ? 8 : 4;
}

// NONSCALING and EXPANSION together: only EXPANSION 0 agrees with it.
uint32_t ResolveExpansion(ArgParser& parser, bool nonscaling,
                          std::optional<uint64_t> expansion, uint32_t fallback) {
  if (nonscaling && expansion && *expansion != 0) {
    parser.Fail(errors::kNonScalingCannotExpand);
    return fallback;
  }
  if (nonscaling) return 0;
  return expansion ? static_cast<uint32_t>(*expansion) : fallback;
}

// WINDOW's seconds, as milliseconds (fractions allowed: 1.5 = 1500 ms).
uint64_t NextWindowMs(ArgParser& parser) {
  const double seconds = parser.NextDouble(errors::kBadWindow, errors::kBadWindow);
  const double ms = seconds * 1000;
  if (!parser.failed() && !(ms >= 1 && ms <= static_cast<double>(kMaxWindowMs))) {
    parser.Fail(errors::kBadWindow);
    return 0;
  }
  return parser.failed() ? 0 : static_cast<uint64_t>(ms + 0.5);
}

uint32_t NextGenerations(ArgParser& parser) {
  const uint64_t n = parser.NextUint64(errors::kBadGenerations, errors::kBadGenerations);
  if (!parser.failed() && (n == 0 || n > kMaxWindowGenerations)) parser.Fail(errors::kBadGenerations);
  return static_cast<uint32_t>(n);
}

// SEED's value: valkey-bloom's 32 raw bytes (filters/hash_seed.h
// SeedFromBytes), or an unsigned 64-bit integer other than 0, which marks
// filters saved before per-filter seeds existed. 32 bytes are always the
// raw form: no integer in range has 32 digits without leading zeros.
uint64_t NextSeed(ArgParser& parser) {
  const std::string_view text = parser.Next(errors::kBadSeed);
  if (parser.failed()) return 0;
  if (text.size() == kValkeySeedBytes) return SeedFromBytes(text);
  uint64_t seed = 0;
  if (!ParseUint64(text, &seed) || seed == 0) parser.Fail(errors::kBadSeed);
  return seed;
}

// valkey-bloom's TIGHTENING value: a double in (0, 1). A missing value is
// the wrong number of arguments, as there.
double NextTightening(ArgParser& parser, std::string_view command_name) {
  if (!parser.HasNext()) parser.Fail(errors::WrongArity(command_name));
  const double ratio = parser.NextDouble(errors::kBadTighteningRatio, errors::kBadTighteningRatio);
  if (!parser.failed() && !IsTighteningRatio(ratio)) parser.Fail(errors::kTighteningRatioRange);
  return ratio;
}

// valkey-bloom's VALIDATESCALETO value: a signed 64-bit count, at least 1
// ("0" has a text of its own; negatives and non-numbers are "bad").
uint64_t NextScaleTo(ArgParser& parser, std::string_view command_name) {
  if (!parser.HasNext()) parser.Fail(errors::WrongArity(command_name));
  const std::string_view text = parser.Next(errors::kValkeyBadCapacity);
  int64_t count = 0;
  if (parser.failed()) return 0;
  if (!ParseInt64(text, &count) || count < 0) {
    parser.Fail(errors::kValkeyBadCapacity);
  } else if (count == 0) {
    parser.Fail(errors::kValkeyCapacityRange);
  }
  return static_cast<uint64_t>(count);
}

// The window options' own checks, once every option is read.
void CheckWindow(ArgParser& parser, std::optional<uint64_t> window_ms,
                 std::optional<uint32_t> generations, bool nonscaling,
                 std::optional<uint64_t> expansion, uint32_t default_generations) {
  if (parser.failed()) return;
  if (generations && !window_ms) {
    parser.Fail(errors::kGenerationsWithoutWindow);
  } else if (window_ms && (nonscaling || (expansion && *expansion == 0))) {
    parser.Fail(errors::kWindowNonScaling);
  } else if (window_ms && *window_ms < generations.value_or(default_generations)) {
    parser.Fail(errors::kWindowTooShort);
  }
}

}  // namespace

BloomParams DefaultBloomParams(const RuntimeConfig& runtime) {
  ServerConfig config = runtime.Get();
  return BloomParams{config.bf_error_rate, config.bf_initial_size,
                     config.bf_expansion_factor, config.cbf_counter_bits};
}

BloomParams CreateRule::Resolve(const RuntimeConfig& config) const {
  BloomParams params = DefaultBloomParams(config);
  params.error_rate = error_rate.value_or(params.error_rate);
  params.capacity = capacity.value_or(params.capacity);
  params.expansion = expansion.value_or(params.expansion);
  params.counter_bits = counter_bits.value_or(params.counter_bits);
  params.window_ms = window_ms.value_or(0);
  params.generations = generations.value_or(params.generations);
  params.seed = seed;
  params.tightening = tightening.value_or(kErrorTighteningRatio);
  // A windowed filter always scales (CheckWindow refused EXPANSION 0); the
  // config's default may be 0.
  if (params.window_ms != 0 && params.expansion == 0) params.expansion = 2;
  return params;
}

void ParseReserveArgs(ArgParser& parser, bool counting, BloomParams* params) {
  params->error_rate = parser.NextDouble(errors::kBadErrorRate, errors::kBadErrorRate);
  if (!parser.failed() && !(params->error_rate > 0 && params->error_rate < 1)) {
    parser.Fail(errors::kErrorRateRange);
  }
  params->capacity = NextCount(parser, errors::kBadCapacity, errors::kCapacityRange);
  if (!parser.failed() && params->capacity == 0) parser.Fail(errors::kCapacityRange);
  bool nonscaling = false;
  std::optional<uint64_t> expansion;
  std::optional<uint32_t> counter_bits;
  std::optional<uint64_t> window_ms;
  std::optional<uint32_t> generations;
  std::optional<uint64_t> seed;
  while (parser.HasNext() && !parser.failed()) {
    if (parser.Accept("SEED")) {
      if (seed) parser.Fail(errors::kDuplicateOption);
      seed = NextSeed(parser);
    } else if (parser.Accept("WINDOW")) {
      if (window_ms) parser.Fail(errors::kDuplicateOption);
      window_ms = NextWindowMs(parser);
    } else if (parser.Accept("GENERATIONS")) {
      if (generations) parser.Fail(errors::kDuplicateOption);
      generations = NextGenerations(parser);
    } else if (parser.Accept("EXPANSION")) {
      if (expansion) parser.Fail(errors::kDuplicateOption);
      if (!parser.HasNext()) parser.Fail(errors::kNoExpansion);
      expansion = NextCount(parser, errors::kBadExpansion, errors::kExpansionRange);
      if (!parser.failed() && *expansion > kMaxBloomExpansion) {
        parser.Fail(errors::kExpansionRange);
      }
    } else if (parser.Accept("NONSCALING")) {
      if (nonscaling) parser.Fail(errors::kDuplicateOption);
      nonscaling = true;
    } else if (counting && parser.Accept("COUNTERBITS")) {
      if (counter_bits) parser.Fail(errors::kDuplicateOption);
      counter_bits = NextCounterBits(parser);
    } else {
      parser.Fail(errors::kSyntax);
    }
  }
  CheckWindow(parser, window_ms, generations, nonscaling, expansion, params->generations);
  if (parser.failed()) return;
  params->expansion = ResolveExpansion(parser, nonscaling, expansion, params->expansion);
  if (counter_bits) params->counter_bits = *counter_bits;
  params->seed = seed;
  if (window_ms) {
    params->window_ms = *window_ms;
    params->generations = generations.value_or(params->generations);
    if (params->expansion == 0) params->expansion = 2;  // the config default may be 0
  }
}

void ParseInsertArgs(ArgParser& parser, std::string_view command_name, bool counting,
                     CreateRule* rule) {
  bool nonscaling = false;
  std::optional<uint64_t> expansion;
  bool items_found = false;
  while (parser.HasNext() && !parser.failed()) {
    if (parser.Accept("ITEMS")) {
      items_found = true;
      break;
    }
    if (parser.Accept("CAPACITY")) {
      if (rule->capacity) parser.Fail(errors::kDuplicateOption);
      rule->capacity = parser.NextUint64(errors::kInsertBadCapacity, errors::kInsertBadCapacity);
      if (!parser.failed() && *rule->capacity == 0) parser.Fail(errors::kInsertBadCapacity);
    } else if (parser.Accept("ERROR")) {
      if (rule->error_rate) parser.Fail(errors::kDuplicateOption);
      rule->error_rate =
          parser.NextDouble(errors::kInsertBadErrorRate, errors::kInsertBadErrorRate);
      if (!parser.failed() && !(*rule->error_rate > 0 && *rule->error_rate < 1)) {
        parser.Fail(errors::kInsertBadErrorRate);
      }
    } else if (parser.Accept("EXPANSION")) {
      if (expansion) parser.Fail(errors::kDuplicateOption);
      expansion = parser.NextUint64(errors::kInsertBadExpansion, errors::kInsertBadExpansion);
      // [1, 32768]: RedisBloom refuses BF.INSERT's EXPANSION 0 (its docs: "a
      // positive integer"; NONSCALING is how BF.INSERT asks for no growth),
      // although BF.RESERVE takes 0 as NONSCALING (README).
      if (!parser.failed() && (*expansion == 0 || *expansion > kMaxBloomExpansion)) {
        parser.Fail(errors::kInsertBadExpansion);
      }
    } else if (parser.Accept("SEED")) {
      if (rule->seed) parser.Fail(errors::kDuplicateOption);
      rule->seed = NextSeed(parser);
    } else if (parser.Accept("WINDOW")) {
      if (rule->window_ms) parser.Fail(errors::kDuplicateOption);
      rule->window_ms = NextWindowMs(parser);
    } else if (parser.Accept("GENERATIONS")) {
      if (rule->generations) parser.Fail(errors::kDuplicateOption);
      rule->generations = NextGenerations(parser);
    } else if (parser.Accept("NOCREATE")) {
      if (!rule->create) parser.Fail(errors::kDuplicateOption);
      rule->create = false;
    } else if (parser.Accept("NONSCALING")) {
      if (nonscaling) parser.Fail(errors::kDuplicateOption);
      nonscaling = true;
    } else if (counting && parser.Accept("COUNTERBITS")) {
      if (rule->counter_bits) parser.Fail(errors::kDuplicateOption);
      rule->counter_bits = NextCounterBits(parser);
    } else if (!counting && parser.Accept("TIGHTENING")) {
      if (rule->tightening) parser.Fail(errors::kDuplicateOption);
      rule->tightening = NextTightening(parser, command_name);
    } else if (!counting && parser.Accept("VALIDATESCALETO")) {
      if (rule->validate_scale_to) parser.Fail(errors::kDuplicateOption);
      rule->validate_scale_to = NextScaleTo(parser, command_name);
    } else {
      parser.Fail(errors::kInsertUnknownArgument);
    }
  }
  if (!parser.failed() && (!items_found || !parser.HasNext())) {
    parser.Fail(errors::WrongArity(command_name));
  }
  if (!parser.failed() && !rule->create && (rule->capacity || rule->error_rate)) {
    parser.Fail(errors::kNoCreateWithOptions);
  }
  if (!parser.failed() && !rule->create && rule->counter_bits) {
    parser.Fail(errors::kNoCreateWithCounterBits);
  }
  if (!parser.failed() && !rule->create && rule->seed) parser.Fail(errors::kNoCreateWithSeed);
  if (!parser.failed() && !rule->create && rule->tightening) {
    parser.Fail(errors::kNoCreateWithTightening);
  }
  if (!parser.failed() && rule->window_ms && (rule->tightening || rule->validate_scale_to)) {
    parser.Fail(errors::kWindowWithValkeyOptions);
  }
  if (!parser.failed() && !rule->create && (rule->window_ms || rule->generations)) {
    parser.Fail(errors::kNoCreateWithWindow);
  }
  CheckWindow(parser, rule->window_ms, rule->generations, nonscaling, expansion,
              /*default_generations=*/4);
  if (parser.failed()) return;
  if (nonscaling || expansion) {
    rule->expansion = ResolveExpansion(parser, nonscaling, expansion, 0);
  }
  // valkey-bloom judges NONSCALING here, before any key is looked at; a
  // config default of expansion 0 is judged with the config (CheckScaleTo).
  if (!parser.failed() && rule->validate_scale_to && rule->expansion == uint32_t{0}) {
    parser.Fail(errors::kNonScalingValidateScaleTo);
  }
}

}  // namespace bloomgate
