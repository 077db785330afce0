"""The dashboards and rules against a real Prometheus scraping ``kubetrio run --embedded``.

The Debian package's ``prometheus`` runs on a free loopback port with a temporary TSDB, scraping
the demo's manager every second and evaluating config/prometheus/rules.yaml every second. Once
the demo has done its work, every panel query of every dashboard (variables on "All"), every
dashboard variable, every recording rule and every alert's signal is evaluated through the HTTP
API over the run: each must parse and return at least one number (a histogram quantile over
an idle window is NaN: that does not count). A query that may legitimately be empty is listed
below with the reason. Every metric family the manager exports must be on a dashboard or in the
monitoring page's list of undashboarded metrics.

Both processes run on real time; the test waits on conditions (Prometheus ready, queries with
data) by polling Prometheus's API, under one deadline.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import trio

pytestmark = [pytest.mark.process, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


render = load_module(ROOT / "config" / "dashboards" / "render.py", "kubetrio_dashboards_render")
gen = render.generate

# The whole test, processes included; the demo itself finishes in well under a minute.
DEADLINE = 85.0
# Leave this much of the deadline for the final evaluation and the report.
EVALUATION_RESERVE = 10.0

# Queries that may return nothing for the demo, by (dashboard, panel, refId): why.
ALLOWED_EMPTY: dict[tuple[str, str, str], str] = {}

# Recorded series that may be empty for the demo (record name: why).
ALLOWED_EMPTY_RECORDS: dict[str, str] = {}

# The embedded demo runs one manager without --sharding: sharding's series stay empty.
UNSHARDED = "the embedded demo does not shard"


# The demo neither updates a machine in place nor preserves one.
NO_IN_PLACE_OR_PRESERVED = "the embedded demo has no in-place update and no preserved machine"
IN_PLACE_OR_PRESERVED = (
    "kubetrio_machine_in_place_update_phase_since_seconds",
    "kubetrio_machine_preserve_expiry_time_seconds",
)


def sharding_only(expr: str) -> bool:
    """Whether ``expr`` reads sharding's series only (label names, among the tokens, have no
    underscore)."""
    names = [t for t in resolved_tokens(expr) if "_" in t or ":" in t]
    return bool(names) and all("kubetrio_sharding_" in name for name in names)


# Families kubetrio does not export yet; their queries are checked to parse and evaluate, and
# reported, but cannot have data until the gap is closed (metric name prefix: the gap).
# (A counter or histogram whose events all happened before Prometheus first scraped it cannot
# show them in a rate either; the test finds those by looking at their first samples.)

# Controllers this build may not have yet: their dashboards' and rules' queries are checked
# to evaluate but cannot have data without them (controller: metric name prefixes, dashboard).
CONTROLLER_METRICS: dict[str, tuple[tuple[str, ...], str]] = {
    "machine": (("mcm_", "kubetrio_machine_", "kubetrio_drain_"), "machines"),
    "nodedelete": (("kubetrio_storage_",), "storage"),
}


def missing_controller(dashboard: str | None, expr: str) -> str | None:
    from kubetrio.controllers import BUILTIN_CONTROLLERS

    tokens = resolved_tokens(expr)
    for controller, (prefixes, board) in CONTROLLER_METRICS.items():
        if controller in BUILTIN_CONTROLLERS:
            continue
        if dashboard == board or any(t.startswith(prefixes) for t in tokens):
            return f"this build has no {controller} controller"
    return None


# What each alert watches: sub-expressions of its `expr` that must have data for the demo
# (the alerts themselves must stay quiet: the demo is healthy).
ALERT_SIGNALS: dict[str, list[str]] = {
    "KubetrioMachineFailed": ["max by (namespace, name) (mcm_machine_current_status_phase)"],
    "KubetrioMachineDrainOverdue": ["max by (namespace, name) (mcm_machine_current_status_phase)"],
    "KubetrioMachineControllerFrozen": ["max by (namespace) (mcm_machine_controller_frozen)"],
    "KubetrioMachinesFailToJoin": [
        "sum by (namespace, machine_deployment) (increase(mcm_machine_num_failed_join[1h]))"
    ],
    "KubetrioMachineDeploymentReplicasMismatch": [
        "max by (namespace, name) (mcm_machine_deployment_status_available_replicas)",
        "max by (namespace, name) (mcm_machine_deployment_info_spec_replicas)",
        "max by (namespace, name) (changes(mcm_machine_deployment_status_updated_replicas[10m]))",
    ],
    "KubetrioWorkqueueBacklogGrowing": [
        "min_over_time(workqueue_depth[15m])",
        "deriv(workqueue_depth[15m])",
    ],
    "KubetrioReconcileErrorRatioHigh": [
        "namespace_controller:controller_runtime_reconcile_errors:ratio_rate5m"
    ],
    "KubetrioNoLeader": ["max by (namespace, name) (leader_election_master_status)"],
    # The objects per shard stay empty without sharding; the replicas' Lease gauge has data.
    "KubetrioShardObjectsOrphaned": [
        "max by (namespace, name) (leader_election_master_status == 1)"
    ],
    "KubetrioLeaderChangesFrequent": [
        "sum by (namespace, name) (changes(leader_election_master_status[1h]))"
    ],
    "KubetrioDown": ['up{job="kubetrio"}'],
    # The demo updates nothing in place and preserves no machine: these series have no data
    # there (their panels are allowed empty, NO_IN_PLACE_OR_PRESERVED); the rules' promtool
    # tests fire and quiet them.
    "KubetrioMachineInPlaceUpdateStuck": [],
    "KubetrioPreservedMachineExpiringSoon": [],
    "KubetrioStorageNodeDeletesFailing": [
        "sum by (namespace) (increase(kubetrio_storage_node_deletes_total"
        '{result!~"deleted|not_found"}[10m]))',
        "sum by (namespace) (increase(kubetrio_storage_node_deletes_total"
        '{result=~"deleted|not_found"}[10m]))',
    ],
}

# Series Prometheus adds to every target; not kubetrio's.
PROMETHEUS_OWN = {"up", "scrape_duration_seconds", "scrape_samples_scraped",
                  "scrape_samples_post_metric_relabeling", "scrape_series_added"}  # fmt: skip


def need(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        message = f"{name} not found (Debian package prometheus: apt-get install prometheus)"
        if os.environ.get("KUBETRIO_CI") == "1":
            pytest.fail(message + "; CI must run this test")
        pytest.skip(message)
    return path


def resolved_tokens(expr: str) -> set[str]:
    """The metric names ``expr`` reads, recorded series resolved to what they record."""
    tokens = gen.metric_tokens(expr)
    for token in list(tokens):
        for inner in gen.recorded().get(token, []):
            tokens |= gen.metric_tokens(inner)
    return tokens


def known_gap(expr: str, dashboard: str | None = None) -> str | None:
    return missing_controller(dashboard, expr)


class Check:
    """One expression that must have data, with what to say when it has none."""

    def __init__(
        self, what: str, expr: str, allowed_empty: str | None = None, dashboard: str | None = None
    ) -> None:
        self.what = what
        self.expr = expr
        self.allowed_empty = allowed_empty
        self.gap = known_gap(expr, dashboard)
        self.points = 0
        self.error: str | None = None

    @property
    def required(self) -> bool:
        return self.allowed_empty is None and self.gap is None


def checks() -> list[Check]:
    out: list[Check] = []
    for name in gen.NAMES:
        values = gen.all_values(name)
        for query in gen.panel_queries(name):
            expr = gen.expand(query.expr, values, render.RATE_INTERVAL)
            reason = (
                ALLOWED_EMPTY.get((name, query.panel, query.ref))
                or (UNSHARDED if sharding_only(expr) else None)
                or (
                    NO_IN_PLACE_OR_PRESERVED
                    if any(m in expr for m in IN_PLACE_OR_PRESERVED)
                    else None
                )
            )
            out.append(Check(f"{name} / {query.panel} / {query.ref}", expr, reason, name))
    for rule in gen.rules():
        if "record" in rule:
            labels = ", ".join(f'{k}="{v}"' for k, v in rule.get("labels", {}).items())
            out.append(
                Check(
                    f"record {rule['record']} {labels}",
                    f"{rule['record']}{{{labels}}}",
                    ALLOWED_EMPTY_RECORDS.get(rule["record"])
                    or (UNSHARDED if "kubetrio_sharding_" in rule["record"] else None),
                )
            )
        else:
            flat = " ".join(rule["expr"].split())
            signals = ALERT_SIGNALS[rule["alert"]]
            for signal in signals:
                assert signal in flat, f"{rule['alert']}: {signal!r} is not in its expr"
                out.append(Check(f"alert {rule['alert']} watches {signal}", signal))
    return out


EARLY = "early events: "


def counters_read(expr: str) -> set[str]:
    """The counters (and histogram buckets/counts) ``expr`` reads, through recording rules."""
    return {t for t in resolved_tokens(expr) if t.endswith(("_total", "_bucket", "_count"))}


def explain_empty(api: Any, item: Check, start: float) -> None:
    """Mark an empty check as unverifiable when the counters it reads saw all their events
    before their first sample (series born with their value). Checked again on every poll:
    an explanation is dropped as soon as the check has data."""
    early = sorted(
        counter
        for counter in counters_read(item.expr)
        if render.events_before_first_sample(api, counter, start, time.time())
    )
    if early:
        item.allowed_empty = (
            f"{EARLY}{', '.join(early)} counted all their events before Prometheus first saw them "
            "(series created by their first observation, or the work finished before the "
            "first scrape), so no rate can show them"
        )


def evaluate(api: Any, items: list[Check], start: float) -> None:
    end = time.time()
    for item in items:
        if item.allowed_empty and item.allowed_empty.startswith(EARLY):
            item.allowed_empty = None  # explained by an earlier poll: look again
        try:
            item.points = render.finite_points(api.query_range(item.expr, start, end, 1))
            item.error = None
        except render.PromQLError as error:
            item.error = str(error)


def exported_families(metrics_url: str) -> set[str]:
    with urllib.request.urlopen(metrics_url, timeout=10) as response:
        text = response.read().decode()
    return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}


async def poll(condition: Callable[[], bool], interval: float = 0.5) -> None:
    """Return once ``condition`` (run in a thread: it does blocking HTTP) is true."""
    while True:
        if await trio.to_thread.run_sync(condition):
            return
        await trio.sleep(interval)


async def test_dashboards_and_rules_have_data_in_a_real_prometheus(tmp_path: Path) -> None:
    prometheus = need("prometheus")
    metrics_port, probe_port, prom_port = (render.free_port() for _ in range(3))
    config = tmp_path / "prometheus.yml"
    config.write_text(render.prometheus_config(metrics_port))
    api = render.PrometheusAPI(f"http://127.0.0.1:{prom_port}")
    items = checks()
    problems: list[str] = []
    started = time.monotonic()
    with (
        (tmp_path / "kubetrio.log").open("wb") as kubetrio_log,
        (tmp_path / "prometheus.log").open("wb") as prometheus_log,
        trio.fail_after(DEADLINE),
    ):
        async with trio.open_nursery() as nursery:
            # Prometheus first: kubetrio's first samples must be scraped before the demo's
            # first machine is created, or that creation is part of the series' first value
            # and no rate ever shows it.
            server = await nursery.start(
                functools.partial(
                    trio.run_process,
                    render.prometheus_command(prometheus, config, tmp_path / "tsdb", prom_port),
                    stdout=prometheus_log,
                    stderr=subprocess.STDOUT,
                    check=False,
                )
            )
            # Scraping starts some seconds after "ready" (target discovery); up{} = 0 for the
            # not yet started manager says the scrape loop runs.
            await poll(functools.partial(render.scraping, api))
            start = time.time()
            kubetrio = await nursery.start(
                functools.partial(
                    trio.run_process,
                    render.kubetrio_command(tmp_path, metrics_port, probe_port),
                    stdout=kubetrio_log,
                    stderr=subprocess.STDOUT,
                    check=False,
                )
            )
            try:
                # One failed VM deletion (transient: retried), scripted through the simulated
                # cloud's API before the demo scales down, so the driver-errors panel has a
                # series; the demo itself has no driver failures.
                log = tmp_path / "kubetrio.log"
                await poll(lambda: sim_cloud(log) is not None)
                await trio.to_thread.run_sync(script_delete_failure, sim_cloud(log))

                def all_required_have_data() -> bool:
                    evaluate(api, items, start)
                    for item in items:
                        if item.required and not item.points and not item.error:
                            explain_empty(api, item, start)
                    # A query Prometheus rejects will not get better: report it at once.
                    return any(item.error for item in items) or all(
                        item.points for item in items if item.required
                    )

                # The demo runs; wait until every required query has data, or until only the
                # reserve is left, and then report what is still missing.
                with trio.move_on_at(
                    trio.current_time() + DEADLINE - EVALUATION_RESERVE
                    - (time.monotonic() - started)
                ):  # fmt: skip
                    await poll(all_required_have_data)
                await trio.to_thread.run_sync(all_required_have_data)
                families = await trio.to_thread.run_sync(
                    exported_families, f"http://127.0.0.1:{metrics_port}/metrics"
                )
                rule_groups = await trio.to_thread.run_sync(api.get, "/api/v1/rules")
                variables = await trio.to_thread.run_sync(check_variables, api, start)
            finally:
                kubetrio.terminate()
                server.terminate()

    waited = time.monotonic() - started
    # Queries and rules.
    for item in items:
        if item.error:
            problems.append(f"{item.what}: {item.error}\n    {item.expr}")
        elif not item.points and item.required:
            problems.append(f"{item.what}: no data\n    {item.expr}")
    # Rules as Prometheus evaluated them: healthy, and no alert firing for the healthy demo.
    seen_rules = 0
    for group in rule_groups["groups"]:
        for rule in group["rules"]:
            seen_rules += 1
            if rule["health"] != "ok" or rule.get("lastError"):
                problems.append(f"rule {rule['name']}: {rule['health']} {rule.get('lastError')}")
            if rule["type"] == "alerting" and rule["state"] == "firing":
                problems.append(f"alert {rule['name']} fires for the healthy demo")
    assert seen_rules == len(gen.rules()), "Prometheus did not load every rule"
    problems += variables
    # Every family kubetrio exports is on a dashboard or listed as undashboarded.
    assert "workqueue_adds" in families or "workqueue_adds_total" in families, families
    names = gen.dashboarded()
    listed = gen.undashboarded()
    for family in sorted(families - PROMETHEUS_OWN):
        if not (
            gen.covered(family, names)
            or gen.covered(f"{family}_total", names)
            or family in listed
            or f"{family}_total" in listed
        ):
            problems.append(
                f"metric {family} is on no dashboard and not in docs/monitoring.md's list"
            )
    report = [
        f"{len(items)} checks, {sum(bool(i.points) for i in items)} with data, waited {waited:.0f}s"
    ]
    report += [
        f"unverified ({item.gap or item.allowed_empty}): {item.what}"
        for item in items
        if not item.points and not item.required
    ]
    print("\n".join(report))
    assert not problems, "\n".join(problems) + "\n\n" + "\n".join(report)


def sim_cloud(log: Path) -> str | None:
    """The simulated cloud's address, once ``kubetrio run --embedded`` has printed it."""
    found = re.search(r"^sim cloud: (\S+)$", log.read_text(errors="replace"), re.M)
    return found.group(1) if found else None


def script_delete_failure(cloud: str | None) -> None:
    """Script the simulated cloud at its own address."""
    from kubetrio.cmd.demo.seed import CLASS_NAME, NAMESPACE

    body = {
        "class": f"{NAMESPACE}/{CLASS_NAME}",
        "operation": "delete",
        "code": "Unavailable",
        "count": 1,
        "message": "scripted by test_prometheus",
    }
    request = urllib.request.Request(
        f"{cloud}/v1/script",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def check_variables(api: Any, start: float) -> list[str]:
    """Each dashboard variable's ``label_values(selector, label)`` as Grafana asks for it."""
    problems: list[str] = []
    for name in gen.NAMES:
        values = gen.all_values(name)
        for var, query in gen.variable_queries(name).items():
            match = re.fullmatch(r"label_values\((.*), *(\w+)\)", query)
            assert match, query
            selector = gen.expand(match.group(1), values)
            found = api.label_values(match.group(2), selector, start, time.time())
            regex = next(
                v["regex"].strip("/")
                for v in gen.load(name)["templating"]["list"]
                if v["name"] == var
            )
            if regex:
                found = [value for value in found if re.search(regex, value)]
            if not found and not missing_controller(name, selector):
                problems.append(f"{name} variable {var}: {query} has no values")
    return problems
