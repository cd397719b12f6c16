// Every command group and filter family the server serves, registered with
// the catalogue (catalogue/command_table.h, catalogue/family_registry.h),
// which names none of them. Adding a family is one line in registry.cc.
#pragma once

namespace bloomgate {

// Registers everything once; later calls do nothing. Called at start-up,
// before the first ServerContext or CommandTable and before any thread.
void RegisterAllCommands();

}  // namespace bloomgate
