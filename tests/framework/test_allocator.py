"""The allocator policy of a manager process: with the mmap threshold pinned, a socket read's
buffer stays a mapping of its own even after a larger block was freed, where glibc left to
itself carves it from the heap. Each case runs in a fresh interpreter, whose allocator has not
moved its threshold yet."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.process

# Prints whether the threshold was pinned, then how many mappings one READ_SIZE buffer added
# after a 1 MiB block was mapped and freed (glibc's cue to raise its threshold).
CHILD = """
import ctypes, sys
from kubetrio.runtime.http.connection import READ_SIZE
from kubetrio.runtime.manager.allocator import pin_mmap_threshold

class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Mallinfo2
pinned = sys.argv[1] == "pin" and pin_mmap_threshold()
big = bytearray(1 << 20)
del big
before = libc.mallinfo2().hblks
buffer = bytearray(READ_SIZE)
print(pinned, libc.mallinfo2().hblks - before)
"""


def child(mode: str, **environment: str) -> list[str]:
    env = {name: value for name, value in os.environ.items() if name != "MALLOC_MMAP_THRESHOLD_"}
    env.update(environment)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode], capture_output=True, text=True, check=True, env=env
    )
    return out.stdout.split()


def test_pinned_threshold_keeps_a_read_buffer_mapped_after_a_larger_block_was_freed() -> None:
    assert child("pin") == ["True", "1"]


def test_left_alone_glibc_carves_the_read_buffer_from_the_heap() -> None:
    # Why the pin exists: without it the freed 1 MiB block lifted the threshold past the buffer.
    assert child("leave") == ["False", "0"]


def test_a_threshold_the_environment_sets_is_left_alone() -> None:
    pinned, _ = child("pin", MALLOC_MMAP_THRESHOLD_=str(64 * 1024))
    assert pinned == "False"
