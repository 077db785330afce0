"""The Grafana dashboards, written as code: ``python config/dashboards/generate.py`` writes
``framework.json``, ``machines.json`` and ``storage.json`` beside this file.

The JSON files are what users import; this script is where they are edited, so panels stay
uniform (datasource variable, units, legends, layout). ``tests/packaging/test_dashboards.py`` checks
that the committed JSON is what this script writes, and the tests read the panel queries back
with :func:`panel_queries` (the real-Prometheus test evaluates every one of them).

Heavy queries (histogram quantiles, the error ratio, machines per phase) read recorded series
from ``config/prometheus/rules.yaml``; the rest run directly.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCHEMA_VERSION = 39
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
NAMES = ("framework", "machines", "storage")

# Selectors. `namespace` is the manager's namespace (a target label; see scrape.yaml), and for
# per-Machine series the Machine's own; `job` picks kubetrio among other targets for the
# families every Go or Python process exports (process_*, rest_client_*).
NS = 'namespace=~"$namespace"'
CTRL = 'namespace=~"$namespace", controller=~"$controller"'
JOB = 'namespace=~"$namespace", job=~"$job"'
RATE = "$__rate_interval"
# Driver failures per operation and MCM error code.
DRIVER_FAILURES = (
    f"sum by (operation, error_code) (rate(mcm_cloud_api_driver_requests_failed_total{{{NS}}}"
    f"[{RATE}]))"
)


# --- building blocks ---------------------------------------------------------------------


def target(
    expr: str, legend: str = "", *, instant: bool = False, table: bool = False
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "datasource": DATASOURCE,
        "editorMode": "code",
        "expr": expr,
        "legendFormat": legend or "__auto",
        "range": not instant,
        "instant": instant,
    }
    if table:
        out["format"] = "table"
    return out


def timeseries(
    title: str,
    description: str,
    targets: list[dict[str, Any]],
    unit: str = "short",
    *,
    stack: bool = False,
    width: int = 8,
    minimum: float | None = 0,
) -> dict[str, Any]:
    defaults: dict[str, Any] = {
        "unit": unit,
        "custom": {
            "drawStyle": "line",
            "lineWidth": 1,
            "fillOpacity": 30 if stack else 10,
            "showPoints": "never",
            "spanNulls": False,
            "stacking": {"mode": "normal" if stack else "none", "group": "A"},
        },
    }
    if minimum is not None:
        defaults["min"] = minimum
    return {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "targets": targets,
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {
            "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
        "_width": width,
    }


def stat(
    title: str,
    description: str,
    targets: list[dict[str, Any]],
    unit: str = "short",
    *,
    width: int = 8,
) -> dict[str, Any]:
    return {
        "type": "stat",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "targets": targets,
        "fieldConfig": {
            "defaults": {
                "unit": unit,
                "color": {"mode": "thresholds"},
                "thresholds": {"mode": "absolute", "steps": [{"color": "green", "value": None}]},
            },
            "overrides": [],
        },
        "options": {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "value",
            "graphMode": "area",
            "textMode": "auto",
        },
        "_width": width,
    }


PHASES = {
    -4: ("Terminating", "purple"),
    -3: ("Failed", "red"),
    -2: ("CrashLoopBackOff", "orange"),
    -1: ("Unknown", "yellow"),
    0: ("Pending", "blue"),
    1: ("Running", "green"),
}


def machines_table() -> dict[str, Any]:
    mappings = [
        {
            "type": "value",
            "options": {
                str(value): {"text": text, "color": color, "index": index}
                for index, (value, (text, color)) in enumerate(sorted(PHASES.items()))
            },
        }
    ]
    return {
        "type": "table",
        "title": "Machine list",
        "description": "Every Machine with its phase (mcm_machine_current_status_phase) and "
        "what mcm_machine_info says of it: class, provider ID, node.",
        "datasource": DATASOURCE,
        "targets": [
            target(f"mcm_machine_current_status_phase{{{NS}}}", instant=True, table=True),
            target(f"mcm_machine_info{{{NS}}}", instant=True, table=True),
        ],
        "transformations": [
            {"id": "merge", "options": {}},
            {
                "id": "organize",
                "options": {
                    "excludeByName": {
                        "Time": True,
                        "__name__": True,
                        "instance": True,
                        "job": True,
                        "Value #B": True,
                    },
                    "renameByName": {"Value #A": "phase"},
                },
            },
        ],
        "fieldConfig": {
            "defaults": {"custom": {"align": "auto"}},
            "overrides": [
                {
                    "matcher": {"id": "byName", "options": "phase"},
                    "properties": [
                        {"id": "mappings", "value": mappings},
                        {"id": "custom.cellOptions", "value": {"type": "color-background"}},
                    ],
                }
            ],
        },
        "options": {"showHeader": True, "cellHeight": "sm"},
        "_width": 24,
    }


def row(title: str) -> dict[str, Any]:
    return {"type": "row", "title": title, "collapsed": False, "panels": []}


def variable_datasource() -> dict[str, Any]:
    return {
        "name": "datasource",
        "label": "Data source",
        "type": "datasource",
        "query": "prometheus",
        "current": {},
        "hide": 0,
        "includeAll": False,
        "multi": False,
        "options": [],
        "refresh": 1,
        "regex": "",
    }


def variable_query(name: str, label: str, query: str, regex: str = "") -> dict[str, Any]:
    """A multi-value query variable. "All" is ``.*`` unless a regex narrows the values, in
    which case Grafana's own All (the matching values) is kept, so it stays narrowed."""
    return {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DATASOURCE,
        "definition": query,
        "query": {"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "hide": 0,
        "includeAll": True,
        "allValue": None if regex else ".*",
        "multi": True,
        "options": [],
        "refresh": 2,
        "regex": regex,
        "sort": 1,
    }


def variable_job() -> dict[str, Any]:
    return {
        "name": "job",
        "label": "Job",
        "description": "The scrape job of kubetrio (scrape.yaml names it kubetrio); filters the "
        "families that other processes export too (process_*, rest_client_*).",
        "type": "textbox",
        "query": "kubetrio",
        "current": {"text": "kubetrio", "value": "kubetrio"},
        "hide": 0,
        "options": [{"selected": True, "text": "kubetrio", "value": "kubetrio"}],
    }


def dashboard(
    uid: str, title: str, description: str, variables: list[dict[str, Any]], panels: list[Any]
) -> dict[str, Any]:
    laid_out: list[dict[str, Any]] = []
    x = y = 0
    row_height = 0
    for number, panel in enumerate(panels, start=1):
        panel = dict(panel)
        if panel["type"] == "row":
            if x:
                y += row_height
            panel["gridPos"] = {"h": 1, "w": 24, "x": 0, "y": y}
            y += 1
            x = row_height = 0
        else:
            width = panel.pop("_width")
            height = 9 if panel["type"] == "table" else (4 if panel["type"] == "stat" else 8)
            if x + width > 24:
                y += row_height
                x = row_height = 0
            panel["gridPos"] = {"h": height, "w": width, "x": x, "y": y}
            x += width
            row_height = max(row_height, height)
            for ref, tgt in zip("ABCDEFGH", panel["targets"], strict=False):
                tgt["refId"] = ref
        panel["id"] = number
        laid_out.append(panel)
    return {
        "annotations": {
            "list": [
                {
                    "builtIn": 1,
                    "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                    "enable": True,
                    "hide": True,
                    "iconColor": "rgba(0, 211, 255, 1)",
                    "name": "Annotations & Alerts",
                    "type": "dashboard",
                }
            ]
        },
        "description": description,
        "editable": True,
        "fiscalYearStartMonth": 0,
        "graphTooltip": 1,
        "id": None,
        "links": [
            {
                "type": "dashboards",
                "tags": ["kubetrio"],
                "asDropdown": True,
                "title": "kubetrio",
                "includeVars": True,
                "keepTime": True,
            }
        ],
        "panels": laid_out,
        "refresh": "30s",
        "schemaVersion": SCHEMA_VERSION,
        "tags": ["kubetrio"],
        "templating": {"list": variables},
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "timezone": "",
        "title": title,
        "uid": uid,
        "version": 1,
        "weekStart": "",
    }


# --- shared panels -------------------------------------------------------------------------


def reconcile_rate() -> dict[str, Any]:
    return timeseries(
        "Reconciles/s by result",
        "controller_runtime_reconcile_total: success, error, terminal_error, requeue "
        "(Result(requeue=True)), requeue_after (Result(requeue_after=…)).",
        [
            target(
                f"sum by (controller, result) "
                f"(rate(controller_runtime_reconcile_total{{{CTRL}}}[{RATE}]))",
                "{{controller}} {{result}}",
            )
        ],
        "ops",
    )


def queue_depth() -> dict[str, Any]:
    return timeseries(
        "Queue depth",
        "Keys waiting for a worker (workqueue_depth); keys scheduled for later "
        "(requeue_after, backoff) are not counted until they are due.",
        [target(f"sum by (name) (workqueue_depth{{{CTRL}}})", "{{name}}")],
    )


def error_ratio() -> dict[str, Any]:
    return timeseries(
        "Reconcile error ratio",
        "Errors per reconcile over 5m (recorded: namespace_controller:controller_runtime_"
        "reconcile_errors:ratio_rate5m); KubetrioReconcileErrorRatioHigh fires above 10%.",
        [
            target(
                f"namespace_controller:controller_runtime_reconcile_errors:ratio_rate5m{{{CTRL}}}",
                "{{controller}}",
            )
        ],
        "percentunit",
    )


def sharding() -> list[dict[str, Any]]:
    """The sharding row (``kubetrio run --sharding``): the sharder's counts per shard and its
    moves, and each replica's drain acknowledgements. The sharder's series come from the
    replica leading (or the ``kubetrio sharder`` process), hence ``max`` over instances."""
    return [
        row("Sharding"),
        timeseries(
            "Objects per shard",
            "Objects assigned to each shard of each ring (kubetrio_sharding_shard_objects, the "
            "sharder's count every 5 s); KubetrioShardObjectsOrphaned fires when objects stay "
            "on a shard no replica holds.",
            [
                target(
                    f"max by (ring, shard) (kubetrio_sharding_shard_objects{{{NS}}})",
                    "{{ring}} {{shard}}",
                )
            ],
            stack=True,
            width=6,
        ),
        timeseries(
            "Shards by state",
            "Shards as the sharder sees their Leases (kubetrio_sharding_shards): ready, expired "
            "(not renewed lately), uncertain (about to be taken over), dead, orphaned.",
            [
                target(
                    f"max by (ring, state) (kubetrio_sharding_shards{{{NS}}})",
                    "{{ring}} {{state}}",
                )
            ],
            stack=True,
            width=6,
        ),
        timeseries(
            "Moves and drains/s",
            "Assignments (new objects, moves, objects of dead shards), drain labels the sharder "
            "added, drains the shards let go of, and ring rebuilds.",
            [
                target(
                    f"sum by (ring) (rate(kubetrio_sharding_movements_total{{{NS}}}[{RATE}]))",
                    "{{ring}} assigned",
                ),
                target(
                    f"sum by (ring) (rate(kubetrio_sharding_drains_total{{{NS}}}[{RATE}]))",
                    "{{ring}} drains",
                ),
                target(
                    f"sum by (ring) (rate(kubetrio_sharding_drains_acknowledged_total"
                    f"{{{NS}}}[{RATE}]))",
                    "{{ring}} let go",
                ),
                target(
                    f"sum by (ring) (rate(kubetrio_sharding_ring_calculations_total"
                    f"{{{NS}}}[{RATE}]))",
                    "{{ring}} ring rebuilds",
                ),
            ],
            "ops",
            width=6,
        ),
        timeseries(
            "Drain duration",
            "From the drain label to the object's assignment to its new shard, p50 and p99 "
            "over 5m (recorded: namespace_ring:kubetrio_sharding_drain_duration_seconds:"
            "p50_rate5m/p99_rate5m).",
            [
                target(
                    f"namespace_ring:kubetrio_sharding_drain_duration_seconds:{q}_rate5m{{{NS}}}",
                    f"{{{{ring}}}} {q}",
                )
                for q in ("p50", "p99")
            ],
            "s",
            width=6,
        ),
    ]


# --- framework -----------------------------------------------------------------------------


def framework() -> dict[str, Any]:
    def quantiles(record: str, by: str) -> list[dict[str, Any]]:
        return [
            target(f"{record.format(q=q)}{{{CTRL}}}", f"{{{{{by}}}}} {q}") for q in ("p50", "p99")
        ]

    panels: list[Any] = [
        row("Reconciles"),
        reconcile_rate(),
        error_ratio(),
        timeseries(
            "Reconcile errors/s",
            "All errors (controller_runtime_reconcile_errors_total), the terminal ones that are "
            "not retried, and reconciles that raised unexpectedly (panics).",
            [
                target(
                    f"sum by (controller) "
                    f"(rate(controller_runtime_reconcile_errors_total{{{CTRL}}}[{RATE}]))",
                    "{{controller}} errors",
                ),
                target(
                    f"sum by (controller) (rate("
                    f"controller_runtime_terminal_reconcile_errors_total{{{CTRL}}}[{RATE}]))",
                    "{{controller}} terminal",
                ),
                target(
                    f"sum by (controller) "
                    f"(rate(controller_runtime_reconcile_panics_total{{{CTRL}}}[{RATE}]))",
                    "{{controller}} panics",
                ),
            ],
            "ops",
        ),
        timeseries(
            "Reconcile latency",
            "p50 and p99 of controller_runtime_reconcile_time_seconds over 5m (recorded).",
            quantiles(
                "namespace_controller:controller_runtime_reconcile_time_seconds:{q}_rate5m",
                "controller",
            ),
            "s",
        ),
        timeseries(
            "Active workers",
            "Reconciles running now (controller_runtime_active_workers) against the "
            "configured maximum (controller_runtime_max_concurrent_reconciles, --workers).",
            [
                target(
                    f"sum by (controller) (controller_runtime_active_workers{{{CTRL}}})",
                    "{{controller}} active",
                ),
                target(
                    f"sum by (controller) (controller_runtime_max_concurrent_reconciles{{{CTRL}}})",
                    "{{controller}} max",
                ),
            ],
        ),
        row("Work queues"),
        queue_depth(),
        timeseries(
            "Adds/s",
            "workqueue_adds_total: keys put in the queue (events, requeues, retries).",
            [target(f"sum by (name) (rate(workqueue_adds_total{{{CTRL}}}[{RATE}]))", "{{name}}")],
            "ops",
        ),
        timeseries(
            "Retries/s",
            "workqueue_retries_total: rate-limited re-adds after a failed reconcile.",
            [
                target(
                    f"sum by (name) (rate(workqueue_retries_total{{{CTRL}}}[{RATE}]))", "{{name}}"
                )
            ],
            "ops",
        ),
        timeseries(
            "Events dropped/s",
            "kubetrio_events_dropped_total: Events not written, by why (queue_full: the API "
            "server is slow; rate_limited: client-go's spam filter; send_failed: refused).",
            [
                target(
                    f"sum by (reason) (rate(kubetrio_events_dropped_total{{{JOB}}}[{RATE}]))",
                    "{{reason}}",
                )
            ],
            "ops",
        ),
        timeseries(
            "Queue latency",
            "How long keys wait before a worker takes them: p50 and p99 of "
            "workqueue_queue_duration_seconds over 5m (recorded).",
            quantiles(
                "namespace_controller_name:workqueue_queue_duration_seconds:{q}_rate5m", "name"
            ),
            "s",
        ),
        timeseries(
            "Work duration",
            "How long one key's processing takes: p50 and p99 of "
            "workqueue_work_duration_seconds over 5m (recorded).",
            quantiles(
                "namespace_controller_name:workqueue_work_duration_seconds:{q}_rate5m", "name"
            ),
            "s",
        ),
        timeseries(
            "Unfinished work",
            "Seconds of work in progress not yet observed by the work duration "
            "(workqueue_unfinished_work_seconds); growing steadily means stuck workers.",
            [target(f"sum by (name) (workqueue_unfinished_work_seconds{{{CTRL}}})", "{{name}}")],
            "s",
        ),
        timeseries(
            "Longest running processor",
            "Age of the oldest reconcile in progress "
            "(workqueue_longest_running_processor_seconds).",
            [
                target(
                    f"max by (name) (workqueue_longest_running_processor_seconds{{{CTRL}}})",
                    "{{name}}",
                )
            ],
            "s",
        ),
        row("API client"),
        timeseries(
            "API requests/s by code",
            "rest_client_requests_total by HTTP status code and method; the whole manager "
            "(the client is shared by all controllers, so the controller variable does not "
            "apply).",
            [
                target(
                    f"sum by (code, method) (rate(rest_client_requests_total{{{JOB}}}[{RATE}]))",
                    "{{code}} {{method}}",
                )
            ],
            "reqps",
            width=12,
        ),
        timeseries(
            "API request latency",
            "p50 and p99 of rest_client_request_duration_seconds by verb over 5m (recorded).",
            [
                target(
                    f"namespace_job_verb:rest_client_request_duration_seconds:{q}_rate5m{{{JOB}}}",
                    f"{{{{verb}}}} {q}",
                )
                for q in ("p50", "p99")
            ],
            "s",
            width=12,
        ),
        row("Process and leader election"),
        timeseries(
            "CPU",
            "CPU seconds per second of each kubetrio process (process_cpu_seconds_total).",
            [
                target(
                    f"rate(process_cpu_seconds_total{{{JOB}}}[{RATE}])",
                    "{{instance}}",
                )
            ],
            "percentunit",
            width=6,
        ),
        timeseries(
            "Resident memory",
            "process_resident_memory_bytes of each kubetrio process.",
            [target(f"process_resident_memory_bytes{{{JOB}}}", "{{instance}}")],
            "bytes",
            width=6,
        ),
        timeseries(
            "Open file descriptors",
            "process_open_fds against the limit process_max_fds.",
            [
                target(f"process_open_fds{{{JOB}}}", "{{instance}} open"),
                target(f"process_max_fds{{{JOB}}}", "{{instance}} max"),
            ],
            width=6,
        ),
        timeseries(
            "Leader",
            "leader_election_master_status: 1 on the replica holding the lease, 0 on standbys "
            "(only with --leader-elect).",
            [target(f"leader_election_master_status{{{JOB}}}", "{{instance}} {{name}}")],
            width=6,
        ),
        *sharding(),
    ]
    return dashboard(
        "kubetrio-framework",
        "kubetrio / Framework",
        "Reconciles, work queues, API client and process of every kubetrio controller.",
        [
            variable_datasource(),
            variable_query(
                "namespace",
                "Namespace",
                "label_values(controller_runtime_reconcile_total, namespace)",
            ),
            variable_query(
                "controller",
                "Controller",
                'label_values(controller_runtime_reconcile_total{namespace=~"$namespace"}, '
                "controller)",
            ),
            variable_job(),
        ],
        panels,
    )


# --- machines ------------------------------------------------------------------------------


# A MachineSet of a deployment is named <deployment>-<template hash> (MCM's gauges carry no
# owner label), so the deployment is the name without its last dash-separated part.
SET_DEPLOYMENT = '"deployment", "$1", "name", "(.+)-[^-]+"'


def deployments_and_sets() -> list[dict[str, Any]]:
    """MCM's mcm_machine_deployment_* and mcm_machine_set_* gauges: is every deployment at its
    desired size, how far is a rollout, which machines failed."""
    per_deployment = "{{namespace}}/{{name}}"
    return [
        row("Deployments and sets"),
        stat(
            "MachineDeployments",
            "mcm_machine_deployment_items_total: MachineDeployments the controller sees.",
            [target(f"sum(mcm_machine_deployment_items_total{{{NS}}})")],
            width=6,
        ),
        stat(
            "MachineSets",
            "mcm_machine_set_items_total: MachineSets the controller sees (a deployment keeps "
            "old, empty ones up to its revisionHistoryLimit).",
            [target(f"sum(mcm_machine_set_items_total{{{NS}}})")],
            width=6,
        ),
        timeseries(
            "Failed machines",
            "Failed machines each deployment reports from its sets "
            "(mcm_machine_deployment_failed_machines; 0 when none), and Failed machines the "
            "sets deleted to replace them in the last hour (mcm_machine_stale_machines_total).",
            [
                # A Failed machine is listed only until its set deletes it (0 to 5 one-second
                # scrapes in the demo): each deployment also gets a 0 rather than a gap.
                target(
                    f"count by (namespace, name) (mcm_machine_deployment_failed_machines{{{NS}}})"
                    f" or sum by (namespace, name) "
                    f"(0 * mcm_machine_deployment_info_spec_replicas{{{NS}}})",
                    f"{per_deployment} failed",
                ),
                target(
                    f"sum(increase(mcm_machine_stale_machines_total{{{NS}}}[1h]))",
                    "replaced in the last hour",
                ),
            ],
            width=12,
        ),
        timeseries(
            "Deployment replicas",
            "Per MachineDeployment: desired (spec.replicas, mcm_machine_deployment_info_spec_"
            "replicas), updated (machines of the current template), ready and available "
            "(ready for minReadySeconds). A rollout shows updated climbing to desired; "
            "available below desired is capacity missing.",
            [
                target(
                    f"mcm_machine_deployment_info_spec_replicas{{{NS}}}",
                    f"{per_deployment} desired",
                ),
                *(
                    target(
                        f"mcm_machine_deployment_status_{field}_replicas{{{NS}}}",
                        f"{per_deployment} {field}",
                    )
                    for field in ("updated", "ready", "available")
                ),
            ],
            width=12,
        ),
        timeseries(
            "MachineSet replicas",
            "Per MachineSet: desired (mcm_machine_set_info_spec_replicas), ready and "
            "available (mcm_machine_set_status_{ready,available}_replicas). During a rollout "
            "the new set grows as the old ones shrink.",
            [
                target(f"mcm_machine_set_info_spec_replicas{{{NS}}}", f"{per_deployment} desired"),
                *(
                    target(
                        f"mcm_machine_set_status_{field}_replicas{{{NS}}}",
                        f"{per_deployment} {field}",
                    )
                    for field in ("ready", "available")
                ),
            ],
            width=12,
        ),
        timeseries(
            "MachineSets per deployment",
            "MachineSets of each deployment (mcm_machine_set_info, the deployment read from "
            "the set's name <deployment>-<hash>), and those that have machines "
            "(mcm_machine_set_status_replicas > 0): 2 or more while a rollout moves machines.",
            [
                target(
                    f"count by (namespace, deployment) "
                    f"(label_replace(mcm_machine_set_info{{{NS}}}, {SET_DEPLOYMENT}))",
                    "{{namespace}}/{{deployment}} sets",
                ),
                target(
                    f"count by (namespace, deployment) "
                    f"(label_replace(mcm_machine_set_status_replicas{{{NS}}} > 0, "
                    f"{SET_DEPLOYMENT}))",
                    "{{namespace}}/{{deployment}} with machines",
                ),
            ],
            width=12,
        ),
        timeseries(
            "Deployment conditions",
            "mcm_machine_deployment_status_condition: deployments whose Available or "
            "Progressing condition is True, and those where it is not (Progressing False "
            "means the progressDeadlineSeconds passed without progress).",
            [
                target(
                    f"sum by (condition) "
                    f"(mcm_machine_deployment_status_condition{{{NS}}} == bool 1)",
                    "{{condition}} True",
                ),
                target(
                    f"sum by (condition) "
                    f"(mcm_machine_deployment_status_condition{{{NS}}} != bool 1)",
                    "{{condition}} not True",
                ),
            ],
            width=12,
        ),
    ]


def machines() -> dict[str, Any]:
    steps = ("create", "join", "drain", "delete")
    panels: list[Any] = [
        row("Machines"),
        stat(
            "Machines seen",
            "mcm_machine_items_total: Machines the controller sees.",
            [target(f"sum(mcm_machine_items_total{{{NS}}})")],
            width=6,
        ),
        stat(
            "Running",
            "Machines in phase Running.",
            [
                target(
                    f"sum(namespace_phase:mcm_machine_current_status_phase:count"
                    f'{{{NS}, phase="Running"}})'
                )
            ],
            width=6,
        ),
        stat(
            "Failed",
            "Machines in phase Failed; KubetrioMachineFailed fires after 5 minutes.",
            [
                target(
                    f"sum(namespace_phase:mcm_machine_current_status_phase:count"
                    f'{{{NS}, phase="Failed"}})'
                )
            ],
            width=6,
        ),
        stat(
            "Controller frozen",
            "mcm_machine_controller_frozen: 1 while the safety controller holds the machine "
            "controller still because an API server was unreachable for longer than "
            "--machine-safety-apiserver-statuscheck-timeout; KubetrioMachineControllerFrozen "
            "fires after 15 minutes.",
            [target(f"max(mcm_machine_controller_frozen{{{NS}}})")],
            width=6,
        ),
        timeseries(
            "Machines per phase",
            "mcm_machine_current_status_phase counted per phase (recorded: "
            "namespace_phase:mcm_machine_current_status_phase:count).",
            [
                target(
                    f"sum by (phase) "
                    f"(namespace_phase:mcm_machine_current_status_phase:count{{{NS}}})",
                    "{{phase}}",
                )
            ],
            stack=True,
            width=12,
        ),
        timeseries(
            "Machine conditions",
            "mcm_machine_status_condition: Machines whose condition is True, and those where "
            "it is False or Unknown.",
            [
                target(
                    f"sum by (condition) (mcm_machine_status_condition{{{NS}}} == bool 1)",
                    "{{condition}} True",
                ),
                target(
                    f"sum by (condition) (mcm_machine_status_condition{{{NS}}} != bool 1)",
                    "{{condition}} not True",
                ),
            ],
            width=12,
        ),
        timeseries(
            "In-place updates",
            "kubetrio_machine_in_place_update_phase_since_seconds counted per phase: machines "
            "whose node is with its update agent (InPlaceUpdating), updated but not yet moved "
            "to the new MachineSet (InPlaceUpdateSuccessful), or whose update failed "
            "(InPlaceUpdateFailed); KubetrioMachineInPlaceUpdateStuck fires for one in "
            "InPlaceUpdating or InPlaceUpdateFailed for 30 minutes.",
            [
                target(
                    f"count by (phase) "
                    f"(kubetrio_machine_in_place_update_phase_since_seconds{{{NS}}})",
                    "{{phase}}",
                )
            ],
            stack=True,
            width=24,
        ),
        timeseries(
            "Preserved machines",
            "kubetrio_machine_preserve_expiry_time_seconds: machines preserved "
            "(node.machine.sapcloud.io/preserve, or auto-preserved) per phase; a Failed one is "
            "kept instead of replaced until its preserveExpiryTime "
            "(KubetrioPreservedMachineExpiringSoon fires an hour before).",
            [
                target(
                    f"count by (phase) (kubetrio_machine_preserve_expiry_time_seconds{{{NS}}})",
                    "{{phase}}",
                )
            ],
            stack=True,
            width=12,
        ),
        timeseries(
            "Soonest preservation end",
            "Time left until the first preserved Failed machine's preservation ends and it is "
            "replaced.",
            [
                target(
                    f"min(kubetrio_machine_preserve_expiry_time_seconds"
                    f'{{{NS}, phase="Failed"}}) - time()',
                    "time left",
                )
            ],
            "s",
            width=12,
        ),
        machines_table(),
        *deployments_and_sets(),
        row("Lifecycle"),
        timeseries(
            "Step durations",
            "p50 and p90 over the last hour of kubetrio_machine_{create,join,drain,delete}_"
            "duration_seconds (recorded: namespace_step:kubetrio_machine_duration_seconds).",
            [
                target(
                    f"namespace_step:kubetrio_machine_duration_seconds:{q}_rate1h{{{NS}}}",
                    f"{{{{step}}}} {q}",
                )
                for q in ("p50", "p90")
            ],
            "s",
            width=12,
        ),
        timeseries(
            "Steps completed in the last hour",
            "Machines created, joined, drained and deleted (the _count of each step's "
            "duration histogram).",
            [
                target(
                    f"sum(increase(kubetrio_machine_{step}_duration_seconds_count{{{NS}}}[1h]))",
                    step,
                )
                for step in steps
            ],
            width=6,
        ),
        timeseries(
            "Last step duration per pool",
            "MCM's mcm_machine_{create,initialize,join,drain,delete}_duration_seconds: the "
            "last duration of each step for a machine of each MachineDeployment, in whole "
            "seconds (gauges; the p50/p90 above are over every machine).",
            [
                target(
                    f"max by (machine_deployment) (mcm_machine_{step}_duration_seconds{{{NS}}})",
                    f"{{{{machine_deployment}}}} {step}",
                )
                for step in ("create", "initialize", "join", "drain", "delete")
            ],
            "s",
            width=12,
        ),
        timeseries(
            "Failed joins in the last hour",
            "mcm_machine_num_failed_join: machines per MachineDeployment that did not join "
            "within the creation timeout (each pool has a series from the start, at 0); "
            "KubetrioMachinesFailToJoin fires at two in an hour.",
            [
                target(
                    f"sum by (machine_deployment) "
                    f"(increase(mcm_machine_num_failed_join{{{NS}}}[1h]))",
                    "{{machine_deployment}}",
                )
            ],
            width=6,
        ),
        timeseries(
            "Orphan VMs collected",
            "VMs the orphan sweep deleted in the last hour because no Machine owns them "
            "(kubetrio_machine_orphan_vms_deleted_total).",
            [
                target(
                    f"sum(increase(kubetrio_machine_orphan_vms_deleted_total{{{NS}}}[1h]))",
                    "orphans",
                )
            ],
            width=6,
        ),
        row("Drain"),
        timeseries(
            "Evictions/s by result",
            "kubetrio_drain_evictions_total: evicted, pdb_blocked (retried), "
            "pdb_misconfigured, and other outcomes of each eviction attempt.",
            [
                target(
                    f"sum by (result) (rate(kubetrio_drain_evictions_total{{{NS}}}[{RATE}]))",
                    "{{result}}",
                )
            ],
            "ops",
        ),
        timeseries(
            "Drain duration",
            "p90 over the last hour of kubetrio_drain_duration_seconds by outcome (recorded).",
            [
                target(
                    f"namespace_result:kubetrio_drain_duration_seconds:p90_rate1h{{{NS}}}",
                    "p90 {{result}}",
                ),
            ],
            "s",
        ),
        timeseries(
            "Drains in the last hour",
            "Drains finished per outcome (success, failed), from the duration histogram's count.",
            [
                target(
                    f"sum by (result) "
                    f"(increase(kubetrio_drain_duration_seconds_count{{{NS}}}[1h]))",
                    "{{result}}",
                )
            ],
        ),
        timeseries(
            "Pod drain phases",
            "p90 over the last hour of kubetrio_drain_pod_seconds: evict (until accepted), "
            "terminate (until gone), detach and reattach (volumes) (recorded).",
            [
                target(
                    f"namespace_phase:kubetrio_drain_pod_seconds:p90_rate1h{{{NS}}}",
                    "{{phase}}",
                )
            ],
            "s",
            width=24,
        ),
        row("Cloud driver"),
        timeseries(
            "Driver calls/s",
            "mcm_cloud_api_driver_request_duration_seconds_count by provider and operation.",
            [
                target(
                    f"sum by (provider, operation) (rate("
                    f"mcm_cloud_api_driver_request_duration_seconds_count{{{NS}}}[{RATE}]))",
                    "{{provider}} {{operation}}",
                )
            ],
            "ops",
        ),
        timeseries(
            "Driver latency",
            "p50 and p99 of mcm_cloud_api_driver_request_duration_seconds over 5m (recorded).",
            [
                target(
                    "namespace_provider_operation:mcm_cloud_api_driver_request_duration_seconds:"
                    f"{q}_rate5m{{{NS}}}",
                    f"{{{{operation}}}} {q}",
                )
                for q in ("p50", "p99")
            ],
            "s",
        ),
        timeseries(
            "Driver errors/s",
            "mcm_cloud_api_driver_requests_failed_total by operation and MCM error code "
            "(ResourceExhausted, Unavailable, NotFound, …); 0 for an operation that has not "
            "failed (the counter has no series before its first failure).",
            [
                target(
                    f"{DRIVER_FAILURES} or (sum by (operation) (0 * rate("
                    f"mcm_cloud_api_driver_request_duration_seconds_count{{{NS}}}[{RATE}])) "
                    f"unless on (operation) {DRIVER_FAILURES})",
                    "{{operation}} {{error_code}}",
                )
            ],
            "ops",
        ),
        row("Machine controller"),
        reconcile_rate(),
        error_ratio(),
        queue_depth(),
    ]
    return dashboard(
        "kubetrio-machines",
        "kubetrio / Machines",
        "Machines (MCM's machine.sapcloud.io): phases, lifecycle step durations, drains and "
        "the cloud driver.",
        [
            variable_datasource(),
            variable_query("namespace", "Namespace", "label_values(mcm_machine_info, namespace)"),
            variable_query(
                "controller",
                "Controller",
                'label_values(controller_runtime_reconcile_total{namespace=~"$namespace"}, '
                "controller)",
                "/machine.*/",
            ),
            variable_job(),
        ],
        panels,
    )


# --- storage -------------------------------------------------------------------------------


def storage() -> dict[str, Any]:
    panels: list[Any] = [
        row("Storage nodes"),
        timeseries(
            "Node deletes/s by result",
            "kubetrio_storage_node_deletes_total by result: deleted, not_found (already gone), "
            "in_use, locked, error. KubetrioStorageNodeDeletesFailing fires after 30 minutes "
            "of failures without a success.",
            [
                target(
                    f"sum by (result) (rate(kubetrio_storage_node_deletes_total{{{NS}}}[{RATE}]))",
                    "{{result}}",
                )
            ],
            "ops",
        ),
        timeseries(
            "Node deletes in the last hour",
            "kubetrio_storage_node_deletes_total increase per result.",
            [
                target(
                    f"sum by (result) (increase(kubetrio_storage_node_deletes_total{{{NS}}}[1h]))",
                    "{{result}}",
                )
            ],
        ),
        timeseries(
            "Storage GC in the last hour",
            "Runs of the periodic storage GC (kubetrio_storage_gc_runs_total), the storage "
            "nodes it deleted because no Kubernetes node has their name "
            "(kubetrio_storage_gc_deleted_total), and its failures: a list that failed or a "
            "delete the backend refused (kubetrio_storage_gc_errors_total).",
            [
                target(f"sum(increase(kubetrio_storage_gc_runs_total{{{NS}}}[1h]))", "runs"),
                target(f"sum(increase(kubetrio_storage_gc_deleted_total{{{NS}}}[1h]))", "deleted"),
                target(f"sum(increase(kubetrio_storage_gc_errors_total{{{NS}}}[1h]))", "errors"),
            ],
        ),
        row("Storage backend"),
        timeseries(
            "Backend calls/s",
            "kubetrio_storage_backend_request_duration_seconds_count by operation.",
            [
                target(
                    f"sum by (op) (rate("
                    f"kubetrio_storage_backend_request_duration_seconds_count{{{NS}}}[{RATE}]))",
                    "{{op}}",
                )
            ],
            "ops",
        ),
        timeseries(
            "Backend errors/s",
            "kubetrio_storage_backend_request_errors_total: requests without a usable answer "
            "(unreachable, timed out, unexpected status or reply), by operation.",
            [
                target(
                    f"sum by (op) (rate("
                    f"kubetrio_storage_backend_request_errors_total{{{NS}}}[{RATE}]))",
                    "{{op}}",
                )
            ],
            "ops",
        ),
        timeseries(
            "Backend latency",
            "p50 and p99 of kubetrio_storage_backend_request_duration_seconds by operation "
            "over 5m (recorded).",
            [
                target(
                    f"namespace_op:kubetrio_storage_backend_request_duration_seconds:{q}_rate5m"
                    f"{{{NS}}}",
                    f"{{{{op}}}} {q}",
                )
                for q in ("p50", "p99")
            ],
            "s",
        ),
        row("Storage controllers"),
        reconcile_rate(),
        error_ratio(),
        queue_depth(),
    ]
    return dashboard(
        "kubetrio-storage",
        "kubetrio / Storage",
        "Storage-node lifecycle: backend nodes deleted with their Kubernetes nodes, the "
        "periodic GC, and the backend's latency.",
        [
            variable_datasource(),
            variable_query(
                "namespace", "Namespace", "label_values(kubetrio_storage_gc_runs_total, namespace)"
            ),
            variable_query(
                "controller",
                "Controller",
                'label_values(controller_runtime_reconcile_total{namespace=~"$namespace"}, '
                "controller)",
                "/nodedelete|storagegc/",
            ),
            variable_job(),
        ],
        panels,
    )


BUILDERS = {"framework": framework, "machines": machines, "storage": storage}


def render(name: str) -> str:
    return json.dumps(BUILDERS[name](), indent=2) + "\n"


# --- reading dashboards back (the tests and render.py) ------------------------------------


@dataclass(frozen=True)
class PanelQuery:
    dashboard: str
    panel: str
    ref: str
    expr: str
    instant: bool


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HERE / f"{name}.json").read_text())
    return data


def panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in board["panels"]:
        if panel["type"] == "row":
            yield from panel.get("panels", [])
        else:
            yield panel


def panel_queries(name: str) -> list[PanelQuery]:
    return [
        PanelQuery(name, panel["title"], tgt["refId"], tgt["expr"], bool(tgt.get("instant")))
        for panel in panels(load(name))
        for tgt in panel["targets"]
    ]


def variable_queries(name: str) -> dict[str, str]:
    """The ``label_values(...)`` query of each query variable."""
    return {
        var["name"]: var["query"]["query"]
        for var in load(name)["templating"]["list"]
        if var["type"] == "query"
    }


def all_values(name: str) -> dict[str, str]:
    """What each variable of dashboard ``name`` stands for when "All" (or the default) is
    selected: the allValue, else the variable's regex (Grafana's All is then the values that
    match it), else ``.*``; a textbox its text."""
    values: dict[str, str] = {}
    for var in load(name)["templating"]["list"]:
        if var["type"] == "query":
            values[var["name"]] = var.get("allValue") or var["regex"].strip("/") or ".*"
        elif var["type"] == "textbox":
            values[var["name"]] = var["query"]
    return values


def expand(expr: str, values: dict[str, str], rate_interval: str = "1m") -> str:
    """``expr`` with Grafana's variables replaced by ``values`` (see :func:`all_values`).
    ``$1`` is label_replace's capture group, not a variable: Grafana leaves it alone too."""
    values = {**values, "__rate_interval": rate_interval}

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in values:
            raise KeyError(f"unknown dashboard variable ${name} in {expr!r}")
        return values[name]

    return re.sub(r"\$\{([a-zA-Z_]\w*)\}|\$([a-zA-Z_]\w*)", replace, expr)


# --- which metrics the dashboards read -----------------------------------------------------

ROOT = HERE.parent.parent
RULES = ROOT / "config" / "prometheus" / "rules.yaml"
MONITORING = ROOT / "docs" / "monitoring.md"
IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
# Words in PromQL that are not metric names.
PROMQL_WORDS = {
    "sum", "max", "min", "avg", "count", "by", "without", "on", "ignoring", "group_left",
    "group_right", "and", "or", "unless", "bool", "rate", "increase", "deriv", "changes",
    "histogram_quantile", "min_over_time", "max_over_time", "label_values", "offset", "le",
}  # fmt: skip


def metric_tokens(expr: str) -> set[str]:
    """Identifiers outside label matchers, strings, ranges and numbers: the metric names (and
    the label names of by/on clauses, which do no harm where this is used)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\b\d[\w.]*", "", text)  # numbers and durations (offset 5m)
    return {word for word in IDENT.findall(text) if word not in PROMQL_WORDS}


def rules(path: Path = RULES) -> list[dict[str, Any]]:
    import yaml  # PyYAML is a kubetrio dependency

    data = yaml.safe_load(path.read_text())
    return [rule for group in data["groups"] for rule in group["rules"]]


def recorded(path: Path = RULES) -> dict[str, list[str]]:
    """Recorded name → the expressions recording it."""
    out: dict[str, list[str]] = {}
    for rule in rules(path):
        if "record" in rule:
            out.setdefault(rule["record"], []).append(rule["expr"])
    return out


def dashboarded() -> set[str]:
    """Every metric a dashboard reads, directly or through recording rules."""
    records = recorded()
    seen: set[str] = set()
    todo = [token for name in NAMES for q in panel_queries(name) for token in metric_tokens(q.expr)]
    while todo:
        token = todo.pop()
        if token not in seen:
            seen.add(token)
            for expr in records.get(token, []):
                todo.extend(metric_tokens(expr))
    return seen


def covered(family: str, names: set[str]) -> bool:
    """Whether a metric family (histograms by their _bucket/_count/_sum) is among ``names``."""
    return any(
        name in names for name in (family, f"{family}_bucket", f"{family}_count", f"{family}_sum")
    )


def undashboarded() -> set[str]:
    """The monitoring page's list of metrics intentionally on no dashboard."""
    text = MONITORING.read_text()
    block = re.search(r"<!-- undashboarded:start -->(.*?)<!-- undashboarded:end -->", text, re.S)
    if block is None:
        raise LookupError("docs/monitoring.md lost its list of intentionally undashboarded metrics")
    return set(re.findall(r"^- `([a-zA-Z_:][a-zA-Z0-9_:]*)`", block.group(1), re.M))


def main() -> int:
    for name in NAMES:
        (HERE / f"{name}.json").write_text(render(name))
        print(f"wrote {HERE / name}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
