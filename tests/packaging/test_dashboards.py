"""The Grafana dashboards and Prometheus rules, checked without a running Prometheus.

Structure (current schema, datasource and filter variables, layout), that the committed JSON is
what ``config/dashboards/generate.py`` writes, that every query parses (``promtool``), that
recorded series the dashboards read are defined, that every alert has its promtool tests, and
that every metric the code defines is on a dashboard or listed on the monitoring page
(docs/monitoring.md) as intentionally undashboarded. ``tests/packaging/test_prometheus.py``
runs the same queries against a real Prometheus scraping ``kubetrio run --embedded``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = ROOT / "config" / "dashboards"
RULES = ROOT / "config" / "prometheus" / "rules.yaml"
RULES_TEST = ROOT / "config" / "prometheus" / "rules_test.yaml"
SCRAPE = ROOT / "config" / "prometheus" / "scrape.yaml"
MONITORING = ROOT / "docs" / "monitoring.md"


def load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while defining a class
    spec.loader.exec_module(module)
    return module


gen = load_module(DASHBOARDS / "generate.py", "kubetrio_dashboards_generate")


def tool(name: str) -> str:
    """The path of a Prometheus tool; a skip where it is missing, a failure in CI."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} not found (Debian package prometheus: apt-get install prometheus)"
        if os.environ.get("KUBETRIO_CI") == "1":
            pytest.fail(message + "; CI must run this test")
        pytest.skip(message)
    return path


rules = gen.rules
recorded = gen.recorded
metric_tokens = gen.metric_tokens


def all_queries() -> list[Any]:
    return [query for name in gen.NAMES for query in gen.panel_queries(name)]


def panels_of(board: dict[str, Any]) -> list[dict[str, Any]]:
    return list(gen.panels(board))


# --- the JSON ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", gen.NAMES)
def test_committed_dashboard_is_what_the_generator_writes(name: str) -> None:
    committed = (DASHBOARDS / f"{name}.json").read_text()
    assert committed == gen.render(name), (
        f"{name}.json differs from generate.py: run python config/dashboards/generate.py"
    )


@pytest.mark.parametrize("name", gen.NAMES)
def test_dashboard_structure(name: str) -> None:
    board = gen.load(name)
    assert board["schemaVersion"] >= 39
    assert board["uid"] == f"kubetrio-{name}" and board["id"] is None
    variables = {var["name"]: var for var in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for var in ("namespace", "controller"):
        assert variables[var]["type"] == "query"
        assert variables[var]["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert variables[var]["multi"] and variables[var]["includeAll"]
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    occupied: set[tuple[int, int]] = set()
    for panel in board["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] >= 0 and pos["x"] + pos["w"] <= 24, panel["title"]
        cells = {(x, y) for x in range(pos["x"], pos["x"] + pos["w"])
                 for y in range(pos["y"], pos["y"] + pos["h"])}  # fmt: skip
        assert not cells & occupied, f"{panel['title']} overlaps another panel"
        occupied |= cells
    for panel in panels_of(board):
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["description"], panel["title"]
        assert panel["targets"], panel["title"]
        refs = [tgt["refId"] for tgt in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for tgt in panel["targets"]:
            assert tgt["datasource"] == panel["datasource"]
            used = set(re.findall(r"\$\{?([a-zA-Z_]\w*)", tgt["expr"])) - {"__rate_interval"}
            assert used <= set(variables), f"{panel['title']}: undefined {used - set(variables)}"
    titles = [panel["title"] for panel in panels_of(board)]
    assert len(titles) == len(set(titles)), "panel titles must be unique within a dashboard"


def test_dashboard_uids_and_titles_are_distinct() -> None:
    boards = [gen.load(name) for name in gen.NAMES]
    assert len({board["uid"] for board in boards}) == len(boards)
    assert len({board["title"] for board in boards}) == len(boards)


def test_framework_dashboard_has_the_panels_the_issue_asks_for() -> None:
    exprs = " ".join(query.expr for query in gen.panel_queries("framework"))
    for family in (
        "workqueue_depth", "workqueue_adds_total", "workqueue_queue_duration_seconds",
        "workqueue_work_duration_seconds", "workqueue_retries_total",
        "workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds",
        "controller_runtime_reconcile_total", "controller_runtime_reconcile_errors",
        "controller_runtime_reconcile_time_seconds", "controller_runtime_active_workers",
        "rest_client_requests_total", "rest_client_request_duration_seconds",
        "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
    ):  # fmt: skip
        assert family in exprs, family


def test_expand_replaces_every_variable() -> None:
    for name in gen.NAMES:
        values = gen.all_values(name)
        for query in gen.panel_queries(name):
            # Only label_replace's capture references ($1) may stay: they are not variables.
            assert not re.search(r"\$(?!\d)", gen.expand(query.expr, values)), query
    assert gen.all_values("machines")["controller"] == "machine.*"
    with pytest.raises(KeyError):
        gen.expand('up{x=~"$nope"}', {})
    assert gen.expand('label_replace(up, "a", "$1", "b", "(.*)")', {}).count("$1") == 1


# --- rules and queries --------------------------------------------------------------------


def test_recorded_series_read_by_dashboards_are_defined_and_all_used() -> None:
    records = recorded()
    read = {token for query in all_queries() for token in metric_tokens(query.expr)}
    read |= {token for rule in rules() if "alert" in rule for token in metric_tokens(rule["expr"])}
    for token in read:
        if ":" in token:
            assert token in records, f"{token} is read but no rule records it"
    unused = set(records) - read
    assert not unused, f"recorded but never read: {unused}"


def test_every_alert_has_runbook_text_and_severity() -> None:
    for rule in rules():
        if "alert" in rule:
            assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
            assert len(rule["annotations"]["runbook"]) > 80, rule["alert"]
            assert rule["annotations"]["summary"], rule["alert"]


def test_every_alert_has_a_firing_and_a_quiet_promtool_test() -> None:
    alerts = {rule["alert"] for rule in rules() if "alert" in rule}
    fired: set[str] = set()
    quiet: set[str] = set()
    for case in yaml.safe_load(RULES_TEST.read_text())["tests"]:
        for check in case.get("alert_rule_test", []):
            (fired if check["exp_alerts"] else quiet).add(check["alertname"])
    assert alerts == fired, f"never fired in rules_test.yaml: {alerts - fired}"
    assert alerts == quiet, f"never shown quiet in rules_test.yaml: {alerts - quiet}"


@pytest.mark.process
@pytest.mark.slow
def test_rules_check_and_unit_tests_pass_in_promtool() -> None:
    promtool = tool("promtool")
    for args in (["check", "rules", str(RULES)], ["test", "rules", str(RULES_TEST)]):
        result = subprocess.run(
            [promtool, *args], capture_output=True, text=True, cwd=RULES.parent, check=False
        )
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.process
def test_every_dashboard_query_parses(tmp_path: Path) -> None:
    """promtool has no "check this expression", but it parses every rule of a rules file:
    each panel query (and each variable's selector) becomes a recording rule."""
    promtool = tool("promtool")
    exprs: list[str] = []
    for name in gen.NAMES:
        values = gen.all_values(name)
        exprs += [gen.expand(query.expr, values, "1m") for query in gen.panel_queries(name)]
        for query in gen.variable_queries(name).values():
            match = re.fullmatch(r"label_values\((.*), *(\w+)\)", query)
            assert match, query
            exprs.append(gen.expand(match.group(1), values))
    rules_file = tmp_path / "dashboards.rules.yaml"
    rules_file.write_text(
        yaml.safe_dump(
            {
                "groups": [
                    {
                        "name": "dashboards",
                        "rules": [
                            {"record": f"dashboard:query_{i}:parse", "expr": expr}
                            for i, expr in enumerate(exprs)
                        ],
                    }
                ]
            }
        )
    )
    result = subprocess.run(
        [promtool, "check", "rules", str(rules_file)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(exprs)} rules found" in result.stdout


@pytest.mark.process
def test_scrape_example_is_a_valid_prometheus_config(tmp_path: Path) -> None:
    promtool = tool("promtool")
    config = yaml.safe_load(SCRAPE.read_text())
    jobs = [job for job in config["scrape_configs"] if job["job_name"] == "kubetrio"]
    assert len(jobs) == 1 and jobs[0]["honor_labels"] is True
    # As the shipped Deployment serves it: --metrics-secure.
    assert jobs[0]["scheme"] == "https" and "credentials_file" in jobs[0]["authorization"]
    assert "namespace" in {step.get("target_label") for step in jobs[0]["relabel_configs"]}
    # Debian builds Prometheus without Kubernetes service discovery, so its promtool rejects
    # kubernetes_sd_configs: check everything else with a static target in its place.
    # It also insists that the token file (the pod's own, in a cluster) exists here.
    token = tmp_path / "token"
    token.write_text("a-service-account-token")
    for job in config["scrape_configs"]:
        if job.pop("kubernetes_sd_configs", None) is not None:
            job["static_configs"] = [{"targets": ["127.0.0.1:8080"]}]
        if "credentials_file" in job.get("authorization", {}):
            job["authorization"]["credentials_file"] = str(token)
    config["rule_files"] = [str(SCRAPE.parent / name) for name in config["rule_files"]]
    checked = tmp_path / "scrape.yaml"
    checked.write_text(yaml.safe_dump(config))
    result = subprocess.run(
        [promtool, "check", "config", str(checked)],
        capture_output=True,
        text=True,
        cwd=SCRAPE.parent,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# --- coverage: every metric the code defines ----------------------------------------------

DEFINITION = re.compile(
    r"\b(Counter|Gauge|Histogram|Summary|Info|Enum|"
    r"CounterMetricFamily|GaugeMetricFamily|HistogramMetricFamily|SummaryMetricFamily|"
    r"InfoMetricFamily|LoopCounter|LoopGauge|LoopHistogram)"
    r"\(\s*(f?)\"([a-zA-Z_:{}][a-zA-Z0-9_:{}]*)\""
)


def defined_metrics() -> dict[str, str]:
    """Family name as exported → the file defining it, from the source of runtime, controllers
    and cmd. A name built with an f-string keeps its ``{...}`` parts, which
    :func:`name_pattern` turns into wildcards."""
    found: dict[str, str] = {}
    for folder in ("runtime", "controllers", "cmd"):
        for path in (ROOT / folder).rglob("*.py"):
            for kind, fstring, name in DEFINITION.findall(path.read_text()):
                if "{" in name and not fstring:
                    continue
                if "Counter" in kind:
                    name = name.removesuffix("_total") + "_total"
                elif kind.startswith("Info"):
                    name = name.removesuffix("_info") + "_info"
                found[name] = str(path.relative_to(ROOT))
    return found


def name_pattern(family: str) -> re.Pattern[str]:
    parts = re.split(r"\{[^}]*\}", family)
    return re.compile("[a-zA-Z0-9_]+".join(re.escape(part) for part in parts))


def test_defined_metrics_include_names_built_with_f_strings() -> None:
    defined = defined_metrics()
    assert "kubetrio_machine_{name}_duration_seconds" in defined
    pattern = name_pattern("kubetrio_machine_{name}_duration_seconds")
    assert pattern.fullmatch("kubetrio_machine_join_duration_seconds")
    assert not pattern.fullmatch("kubetrio_machine_join_duration_seconds_x")


undashboarded = gen.undashboarded
dashboarded = gen.dashboarded
covered = gen.covered


def test_every_metric_the_code_defines_is_dashboarded_or_listed() -> None:
    defined = defined_metrics()
    assert "workqueue_adds_total" in defined and "leader_election_master_status" in defined
    names = dashboarded()
    listed = undashboarded()

    def known(family: str) -> bool:
        if "{" not in family:
            return covered(family, names) or family in listed
        pattern = name_pattern(family)
        found = [name for name in names | listed if pattern.fullmatch(name.removesuffix("_count"))]
        return bool(found)

    missing = {family: path for family, path in defined.items() if not known(family)}
    assert not missing, (
        "metrics on no dashboard: add a panel, or list them in docs/monitoring.md's undashboarded "
        f"section with the reason: {missing}"
    )
    both = {family for family in listed if covered(family, names)}
    assert not both, f"listed as undashboarded but on a dashboard: {both}"


def test_every_alert_is_explained_on_the_monitoring_page() -> None:
    section = MONITORING.read_text()
    for rule in rules():
        if "alert" in rule:
            assert f"| `{rule['alert']}` | {rule['labels']['severity']} |" in section, rule["alert"]


def test_metric_token_extraction() -> None:
    assert metric_tokens(
        'sum by (le) (rate(a_bucket{x="b_c", y=~"$z"}[5m])) / on (n) b:c:d offset 5m'
    ) == {"a_bucket", "n", "b:c:d"}


def test_driver_errors_panel_reads_zero_for_operations_that_never_failed(tmp_path: Path) -> None:
    """The failure counter has no series before its first failure; the panel still shows 0 per
    operation (from the always-present duration histogram), and a failing operation's rate by
    error code, without a 0 line beside it. Evaluated by promtool's PromQL engine."""
    promtool = tool("promtool")
    values = gen.all_values("machines")
    (query,) = [q for q in gen.panel_queries("machines") if q.panel == "Driver errors/s"]
    expr = gen.expand(query.expr, values, "2m")
    labels = 'namespace="ns", provider="sim"'
    (tmp_path / "empty.rules.yaml").write_text("groups: []\n")
    series = [
        {
            "series": f"mcm_cloud_api_driver_request_duration_seconds_count{{{labels}, "
            f'operation="{op}"}}',
            "values": "0+6x10",
        }
        for op in ("CreateMachine", "DeleteMachine")
    ]
    series.append(
        {
            "series": f"mcm_cloud_api_driver_requests_failed_total{{{labels}, "
            'operation="DeleteMachine", error_code="Unavailable"}',
            "values": "0+60x10",
        }
    )
    test = {
        "rule_files": ["empty.rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": expr,
                        "eval_time": "5m",
                        "exp_samples": [
                            {"labels": '{operation="CreateMachine"}', "value": 0},
                            {
                                "labels": '{operation="DeleteMachine", error_code="Unavailable"}',
                                "value": 1,
                            },
                        ],
                    }
                ],
            }
        ],
    }
    (tmp_path / "panel_test.yaml").write_text(yaml.safe_dump(test))
    result = subprocess.run(
        [promtool, "test", "rules", "panel_test.yaml"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
