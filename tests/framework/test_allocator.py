"""The allocator policy of a manager process: its heap's free pages go back to the system. Each
trimming case runs in a fresh interpreter, whose heap holds only what the case put there."""

from __future__ import annotations

import subprocess
import sys

import pytest
from prometheus_client import CollectorRegistry

from kubetrio.cmd.config import ManagerConfig
from kubetrio.cmd.managers import new_manager
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.allocator import HeapTrimmer

# Fills the heap with 80 MB of 2 KB blocks (above pymalloc's limit: glibc's heap), frees all but
# every 64th (so the heap's top stays in use and free() cannot shrink it from the end), then
# prints whether it trimmed and how many MiB of RSS that returned.
CHILD = """
import os, sys
from kubetrio.runtime.manager.allocator import trim_heap

def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

blocks = [bytes(2000) for _ in range(40_000)]
kept = blocks[::64]
del blocks
before = rss()
trimmed = sys.argv[1] == "trim" and trim_heap()
print(trimmed, (before - rss()) >> 20)
"""


def child(mode: str) -> tuple[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode], capture_output=True, text=True, check=True
    )
    trimmed, released = out.stdout.split()
    return trimmed, int(released)


@pytest.mark.process
def test_a_trim_returns_the_free_pages_inside_the_heap() -> None:
    trimmed, released = child("trim")
    assert trimmed == "True" and released >= 40, (trimmed, released)


@pytest.mark.process
def test_left_alone_glibc_keeps_the_free_pages() -> None:
    # Why the trimmer exists: free() gives back only the heap's top, which is still in use.
    assert child("leave") == ("False", 0)


def test_a_command_manager_trims_its_heap_on_every_replica() -> None:
    manager = new_manager(
        ManagerConfig(),
        Client.from_url("http://127.0.0.1:9"),
        CollectorRegistry(),
        "replica-1",
        lease_name="kubetrio",
        elect=True,
    )
    [trimmer] = [r for r in manager.runnables if isinstance(r, HeapTrimmer)]
    assert not trimmer.needs_leader_election
