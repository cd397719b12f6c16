"""Runs e2e modules with every server on one io-backend.

    BLOOMGATE_BIN=build/server/bloomgate /usr/bin/python3 run_backend.py io_uring test_protocol
    BLOOMGATE_BIN=... /usr/bin/python3 run_backend.py other test_protocol

ctest's e2e_other_backend.* run a representative subset (pipelining,
arguments over 1 MiB, CLIENT KILL, pub/sub, MULTI, CLIENT PAUSE, slow
readers and output buffer limits, shutdown with clients connected) on the
backend that `auto` did not pick for the full e2e.* run: epoll where the
kernel allows io_uring. Where the kernel or a seccomp profile refuses
io_uring, e2e.* ran on epoll and io_uring cannot run, so `other` (and
`io_uring`) exit 77, which ctest reports as Skipped (SKIP_RETURN_CODE),
never as a pass. With io-backend io_uring asked for explicitly, a server
that cannot have it refuses to start, so a passing run did use it.
"""
import ctypes
import os
import sys
import unittest

SKIP = 77
# io_uring_setup is 425 on every architecture Debian builds (the generic
# syscall table and x86_64 share it).
NR_IO_URING_SETUP = 425


def io_uring_refusal():
    """None if this process may set up a ring, else why not."""
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)  # struct io_uring_params
    fd = libc.syscall(NR_IO_URING_SETUP, ctypes.c_uint(2), params)
    if fd < 0:
        return os.strerror(ctypes.get_errno())
    os.close(fd)
    return None


def main(backend, modules):
    if backend not in ("epoll", "io_uring", "other"):
        print(f"unknown backend {backend!r}: epoll, io_uring or other", file=sys.stderr)
        return 2
    if backend == "other":
        # `auto` takes io_uring wherever the kernel allows it.
        backend = "epoll" if io_uring_refusal() is None else "io_uring"
    if backend == "io_uring":
        why = io_uring_refusal()
        if why is not None:
            print(f"SKIPPED: the kernel refuses io_uring here (io_uring_setup: {why}); "
                  "these modules ran on epoll only", flush=True)
            return SKIP
    os.environ["BLOOMGATE_EXTRA_ARGS"] = f"--io-backend {backend}"
    suite = unittest.defaultTestLoader.loadTestsFromNames(modules)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
