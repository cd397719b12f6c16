// Default options for sanitizer builds of filters_test (unused otherwise).
//
// allocator_may_return_null=1: the tests ask for impossible allocations
// (petabytes) to check that a failed allocation becomes kOutOfMemory; by
// default ASan and TSan abort on such a request instead of returning null the
// way the real allocator does.
// halt_on_error=1 for UBSan: a report must fail the test, not scroll by.

extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
extern "C" const char* __tsan_default_options() { return "allocator_may_return_null=1"; }
extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:print_stacktrace=1"; }
