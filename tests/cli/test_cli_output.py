"""``kubetrio crds`` and ``kubetrio manifests`` are filters: a reader that stops early
(``kubetrio manifests | head``, ``| true``) ends them quietly, as it ends any Unix filter."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.process, pytest.mark.slow]


@pytest.mark.parametrize("command", ["crds", "manifests"])
def test_a_reader_that_went_away_is_no_traceback(command: str) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: every write fails with EPIPE
    try:
        result = subprocess.run(
            [sys.executable, "-m", "kubetrio.cmd.main", command],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write_end)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
