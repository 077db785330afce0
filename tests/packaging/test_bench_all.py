"""``tests/bench/all.py``: every benchmark it names exists and accepts its CI arguments, and the
summary table turns RESULT lines into ratios (a failed or incomplete benchmark is a row, not a
crash). CI runs the command itself (``.ci/run``'s benchmark step)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_all", BENCH / "all.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_benchmark_exists_with_ratios() -> None:
    bench_all = load()
    for bench in bench_all.BENCHES:
        assert (BENCH / f"{bench.name}.py").is_file(), bench.name
        assert bench.figures, bench.name


def test_every_benchmark_script_is_run_or_named_separate() -> None:
    bench_all = load()
    scripts = {p.stem for p in BENCH.glob("*.py")} - {"all", "__init__"} - bench_all.HELPERS
    covered = {b.name for b in bench_all.BENCHES} | set(bench_all.SEPARATE)
    assert scripts == covered


def test_the_documentation_lists_every_benchmark() -> None:
    page = (BENCH.parents[1] / "docs" / "contributing.md").read_text()
    for script in BENCH.glob("*.py"):
        if script.stem != "__init__":
            assert f"tests/bench/{script.name}" in page, script.name


def test_table_shows_ratios_and_failures() -> None:
    bench_all = load()
    results = {
        "queue": {"b_over_a": 1.5, "c_over_a": 2.25},
        "drain": {"wall_ratio": 0.3},  # the other drain figures are missing
        "informer": None,  # failed
    }
    text = bench_all.table(results, {"queue": 1.0, "drain": 2.0, "informer": 3.0})
    assert "queue / bare channel" in text and "1.500" in text and "2.250" in text
    assert "0.300" in text and "n/a (KeyError('equal_limits_wall_ratio'))" in text
    assert "informer  FAILED" in text
    assert "3 benchmarks in 6 s" in text


@pytest.mark.process
def test_only_rejects_unknown_names() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "all.py"), "--only", "informer,nope"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown benchmark(s) nope" in done.stderr


@pytest.mark.slow
@pytest.mark.process
@pytest.mark.parametrize("name", ["informer", "reconcile", "drain", "machines"])
def test_changed_benchmarks_accept_their_ci_arguments(name: str) -> None:
    """argparse rejects an unknown flag before any work: ``--help`` plus the CI flags parses."""
    bench = next(b for b in load().BENCHES if b.name == name)
    done = subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py"), *bench.quick, "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
