// Default options for sanitizer builds of server_test (unused otherwise).
//
// TSan's deadlock detector stays on (its default): the key locks hold at
// most KeyLocks::kMaxStripesPerLocker stripes plus two, under the 64 locks
// per thread it can follow (LockAll used to take all 1024 stripes).
// allocator_may_return_null=1: a failed allocation must become kOutOfMemory,
// not a sanitizer abort (as in filters_test).
// halt_on_error=1 for UBSan: a report must fail the test, not scroll by.

extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
extern "C" const char* __tsan_default_options() {
  return "allocator_may_return_null=1";
}
extern "C" const char* __ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1";
}
