"""``tests/bench/machines.py``'s pure arithmetic: the slope that turns CPU and request counts
taken at the end of each wave into a per-machine cost and a fixed cost, and the CLI's refusal
of a wave count no slope can come from."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "machines.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_machines", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_slope_separates_the_fixed_cost_from_the_cost_per_machine() -> None:
    # 0.6 s start-up, 11 ms per machine: 100-machine waves
    per_machine, fixed = load().slope([(100, 1.7), (200, 2.8), (300, 3.9)])
    assert per_machine == pytest.approx(0.011)
    assert fixed == pytest.approx(0.6)


def test_slope_is_a_least_squares_fit_through_noisy_waves() -> None:
    # the middle wave 10 ms dearer: the line splits the difference
    per_machine, fixed = load().slope([(100, 1.7), (200, 2.81), (300, 3.9)])
    assert per_machine == pytest.approx(0.011)
    assert fixed == pytest.approx(0.6 + 0.01 / 3)


def test_slope_needs_two_waves() -> None:
    with pytest.raises(ValueError, match="at least 2 points, got 1"):
        load().slope([(100, 1.7)])


def test_controller_requests_leave_out_watches_and_the_drivers_own() -> None:
    counters = {
        "watch machines": 3,
        "create machines": 100,
        "delete machines": 100,
        "patch machines": 300,
        "create events": 800,
    }
    assert load().controller_requests(counters) == 1100


@pytest.mark.process
def test_one_wave_is_refused_before_any_work() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--machines", "10", "--waves", "1"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--waves: 1 is fewer than the 2 a slope needs" in done.stderr
