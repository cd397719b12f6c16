// The vocabulary of commands_fuzz: which commands it runs, the shape of
// their arguments and the values an argument byte picks from. Shared with
// make_seeds.cc, which writes seed programs in the same encoding.
#pragma once

#include <cstddef>

namespace bloomgate::fuzz {

// Template letters: k key, i item, n integer, f error rate / float, o option
// keyword, p an option keyword or an integer (a byte < 128 picks from
// kOptions, else from kNumbers), r raw bytes, c a SCANDUMP chunk replayed from an earlier reply,
// * repeat the letter before it (count byte times, at most 7).
// The harness's own pseudo-command (see kCommands' last row).
inline constexpr const char* kAdvanceClock = "~ADVANCE-CLOCK";

struct CommandShape {
  const char* name;
  const char* shape;
};
constexpr CommandShape kCommands[] = {
    {"BF.ADD", "ki"},        {"BF.MADD", "ki*"},        {"BF.EXISTS", "ki"},
    {"BF.MEXISTS", "ki*"},   {"BF.RESERVE", "kfnp*"},   {"BF.INSERT", "kp*"},
    {"BF.INFO", "ko"},       {"BF.CARD", "k"},          {"BF.SCANDUMP", "kn"},
    {"BF.LOADCHUNK", "knc"}, {"CF.ADD", "ki"},          {"CF.ADDNX", "ki"},
    {"CF.EXISTS", "ki"},     {"CF.MEXISTS", "ki*"},     {"CF.DEL", "ki"},
    {"CF.COUNT", "ki"},      {"CF.RESERVE", "knp*"},    {"CF.INSERT", "kp*"},
    {"CF.INSERTNX", "kp*"}, {"CF.INFO", "k"},         {"CF.COMPACT", "k"},
    {"CF.SCANDUMP", "kn"},   {"CF.LOADCHUNK", "knc"},   {"CBF.ADD", "ki"},
    {"CBF.MADD", "ki*"},     {"CBF.DEL", "ki"},         {"CBF.MDEL", "ki*"},
    {"CBF.EXISTS", "ki"},    {"CBF.MEXISTS", "ki*"},    {"CBF.COUNT", "ki"},
    {"CBF.CARD", "k"},       {"CBF.RESERVE", "kfnp*"},  {"CBF.INSERT", "kp*"},
    {"CBF.INFO", "ko"},      {"CBF.SCANDUMP", "kn"},    {"CBF.LOADCHUNK", "knc"},
    {"DEL", "kk*"},          {"UNLINK", "kk*"},         {"EXISTS", "kk*"},
    {"TYPE", "k"},           {"EXPIRE", "knp*"},         {"PEXPIRE", "knp*"},
    {"EXPIREAT", "knp*"},     {"PEXPIREAT", "knp*"},      {"PERSIST", "k"},
    {"TTL", "k"},            {"PTTL", "k"},             {"RENAME", "kk"},
    {"RENAMENX", "kk"},      {"KEYS", "r"},             {"SCAN", "np*"},
    {"DBSIZE", ""},          {"FLUSHALL", "o*"},         {"FLUSHDB", "o*"},
    {"MULTI", ""},           {"EXEC", ""},              {"DISCARD", ""},
    {"WATCH", "kk*"},        {"UNWATCH", ""},           {"PING", "r"},
    {"ECHO", "r"},           {"MEMORY", "ok"},          {"GET", "k"},
    {"SET", "kr"},           {"TIME", ""},              {"LASTSAVE", ""},
    // Count-min sketch, top-k, and the merges (windowed filters come from
    // BF.RESERVE / CBF.RESERVE with WINDOW and GENERATIONS).
    {"CMS.INITBYDIM", "knn"}, {"CMS.INITBYPROB", "kff"}, {"CMS.INCRBY", "kin"},
    {"CMS.QUERY", "ki*"},    {"CMS.INFO", "k"},         {"CMS.MERGE", "knk*"},
    {"CMS.SCANDUMP", "kn"},  {"CMS.LOADCHUNK", "knc"},  {"TOPK.RESERVE", "knnnf"},
    {"TOPK.ADD", "ki*"},     {"TOPK.INCRBY", "kin"},    {"TOPK.QUERY", "ki*"},
    {"TOPK.COUNT", "ki*"},   {"TOPK.LIST", "ko*"},      {"TOPK.INFO", "k"},
    {"TOPK.SCANDUMP", "kn"}, {"TOPK.LOADCHUNK", "knc"}, {"BF.MERGE", "kk*"},
    {"CBF.MERGE", "kk*"},    {"CBF.INCR", "ki*"},       {"BF.DEBUG", "k"},
    // Not a command: moves the harness's window clock forward by a number
    // of seconds (windowed filters turn over; commands_fuzz.cc).
    {kAdvanceClock, "n"},
};
constexpr size_t kCommandCount = sizeof(kCommands) / sizeof(kCommands[0]);

constexpr const char* kKeys[] = {"k0", "k1", "k2", "k3"};
constexpr size_t kKeyCount = 4;
constexpr const char* kOptions[] = {
    "CAPACITY", "ERROR",    "EXPANSION", "NONSCALING", "ITEMS",  "NOCREATE",
    "BUCKETSIZE", "MAXITERATIONS", "COUNTERBITS", "SIZE", "FILTERS", "MATCH",
    "COUNT",    "TYPE",     "NX",        "XX",         "GT",     "LT",
    "ASYNC",    "SYNC",     "USAGE",     "SAMPLES",    "ITEMS",  "ITEMS",
    "WINDOW",   "GENERATIONS", "WINDOW", "GENERATIONS", "SEED",  "WITHCOUNT",
    "WEIGHTS",  "COUNTERBITS"};
constexpr const char* kNumbers[] = {
    "0", "1", "2", "3", "4", "7", "8", "10", "16", "64", "100", "255", "256", "1000",
    "4096", "65535", "65536", "-1", "-2", "32768", "32769", "4294967296",
    "9223372036854775807", "-9223372036854775808", "18446744073709551616", "1e3",
    "0x10", " 1", "+1", "",   "1000000", "100000000"};
constexpr const char* kFloats[] = {"0.01", "0.5",   "0.25", "0.9", "1",   "0",
                                   "1e-9", "1e-300", "-0.1", "nan", "inf", "0.001",
                                   "2",    "1e-20", "0.1",  "x"};

}  // namespace bloomgate::fuzz
