// Default options for sanitizer builds of server_test (unused otherwise).
//
// detect_deadlocks=0 for TSan: KeyLocks::LockAll (KEYS, SCAN, FLUSHALL and
// EXEC of a transaction that holds one of them) takes all 1024 stripe locks,
// and TSan's deadlock detector aborts with "CHECK failed:
// sanitizer_deadlock_detector.h:67" once a thread holds more than 64 locks.
// Data races are still reported; only lock-order checking is off.
// allocator_may_return_null=1: a failed allocation must become kOutOfMemory,
// not a sanitizer abort (as in filters_test).
// halt_on_error=1 for UBSan: a report must fail the test, not scroll by.

extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
extern "C" const char* __tsan_default_options() {
  return "allocator_may_return_null=1:detect_deadlocks=0";
}
extern "C" const char* __ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1";
}
