// The rows every family's commands file writes alike, taken from the
// family's record (catalogue/filter_family.h): a row of one key, argv[1], in
// the family's group, and the SCANDUMP / LOADCHUNK pair over the chunk
// transfer (chunk_transfer.h).
#pragma once

#include <cstdint>
#include <string_view>

#include "server/catalogue/command_table.h"
#include "server/catalogue/filter_family.h"
#include "server/commands/family_shared/chunk_transfer.h"

namespace bloomgate {

// The handlers of one family's SCANDUMP and LOADCHUNK: the table takes a
// plain function, so each family's texts make their own instance.
template <const ChunkCommandTexts& kTexts>
void CmdScanDumpOf(CommandContext& ctx) {
  ScanDump(ctx, kTexts);
}
template <const ChunkCommandTexts& kTexts>
void CmdLoadChunkOf(CommandContext& ctx) {
  LoadChunk(ctx, kTexts);
}

class FamilyRows {
 public:
  // Flags as RedisBloom registers its commands (COMPAT.md §1.4): writes are
  // "write deny-oom", reads "readonly fast".
  static constexpr uint32_t kWriteOom = kCmdWrite | kCmdDenyOom;
  static constexpr uint32_t kReadFast = kCmdReadOnly | kCmdFast;

  // `since`: the version of every row that does not name its own.
  FamilyRows(const FilterFamily& family, std::string_view since)
      : family_(family), since_(since) {}

  // A row whose one key is argv[1]; max_args 0 = no upper bound. Its
  // syntax line is the family record's line of that name.
  CommandSpec Row(std::string_view name, int arity, int max_args, uint32_t flags,
                  CommandHandler handler, std::string_view summary,
                  std::string_view since = {}) const {
    CommandSpec row{.name = name, .arity = arity, .max_args = max_args, .flags = flags,
                    .first_key = 1, .last_key = 1, .key_step = 1, .handler = handler,
                    .summary = summary, .group = family_.group,
                    .since = since.empty() ? since_ : since};
    for (const CommandSyntax& line : family_.syntax) {
      if (line.command == name) row.syntax = &line;
    }
    return row;
  }

  // NAME key iterator. Its syntax line is the row's own, as LOADCHUNK's.
  // A read, but when the family's writes commute
  // (kCmdOrderFree adds run beside reads under shared locks) it takes its
  // key exclusively, so the header, the cells and the dump's tag it copies
  // are of one moment.
  template <const ChunkCommandTexts& kTexts>
  CommandSpec ScanDumpRow(std::string_view name, std::string_view summary) const {
    const uint32_t exclusive =
        family_.writes == FamilyWrites::kCommute ? uint32_t{kCmdExclusiveKeys} : 0;
    static constexpr CommandSyntax kSyntax = {"", "key iterator", "iterator:integer"};
    CommandSpec row = Row(name, 3, 0, kReadFast | exclusive, CmdScanDumpOf<kTexts>, summary);
    row.syntax = &kSyntax;
    return row;
  }

  // NAME key iterator data.
  template <const ChunkCommandTexts& kTexts>
  CommandSpec LoadChunkRow(std::string_view name, std::string_view summary) const {
    static constexpr CommandSyntax kSyntax = {"", "key iterator data", "iterator:integer"};
    CommandSpec row = Row(name, 4, 0, kWriteOom, CmdLoadChunkOf<kTexts>, summary);
    row.syntax = &kSyntax;
    return row;
  }

 private:
  const FilterFamily& family_;
  std::string_view since_;
};

}  // namespace bloomgate
