// Where a writer parked on an entry that a read off the loop holds
// (KeyEntry::BeginOffLoopRead: MIGRATE's transfer, a merge's sources) waits:
// a list of the entry's own, called when the last read ends. On the snapshot
// copier's one thread, such a writer sat out the whole hold (a MIGRATE to a
// stopped target: its timeout) while the copies other filters owed a
// snapshot queued behind it.
#pragma once

#include <functional>

#include "server/keyspace/keyspace.h"

namespace bloomgate {

// Calls `done`, on the thread that ends the entry's last read off the loop,
// once none holds it. False (nothing kept) when none holds it now.
bool CallWhenReadsEnd(KeyEntry& entry, const std::function<void()>& done);

}  // namespace bloomgate
