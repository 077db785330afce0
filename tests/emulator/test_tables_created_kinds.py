"""Printer rows of the kinds imperative create makes, for states kubectl alone cannot reach
(finished jobs, load balancers with addresses, many hosts)."""

from __future__ import annotations

import datetime as dt

from kubetrio.emulator.tables import _cronjob_row, _ingress_row, _job_row, _service_row

NOW = dt.datetime(2024, 1, 1, 1, 0, 0, tzinfo=dt.UTC)
MD = {"name": "x", "creationTimestamp": "2024-01-01T00:00:00Z"}


def test_job_status_completions_duration() -> None:
    done = {
        "metadata": MD,
        "spec": {"parallelism": 3, "selector": {"matchLabels": {"b": "2", "a": "1"}}},
        "status": {
            "startTime": "2024-01-01T00:00:00Z",
            "completionTime": "2024-01-01T00:05:30Z",
            "succeeded": 2,
            "conditions": [{"type": "Complete", "status": "True"}],
        },
    }
    assert _job_row(done, NOW)[1:5] == ["Complete", "2/1 of 3", "5m30s", "60m"]
    assert _job_row(done, NOW)[7] == "a=1,b=2"
    running = {
        "metadata": MD,
        "spec": {"completions": 5},
        "status": {"startTime": MD["creationTimestamp"]},
    }
    assert _job_row(running, NOW)[1:4] == ["Running", "0/5", "60m"]
    failed = {"metadata": MD, "status": {"conditions": [{"type": "Failed", "status": "True"}]}}
    assert _job_row(failed, NOW)[1:4] == ["Failed", "0/1", ""]


def test_cronjob_last_schedule_and_active() -> None:
    cj = {
        "metadata": MD,
        "spec": {"schedule": "@hourly", "timeZone": "Etc/UTC", "suspend": True},
        "status": {"active": [{"name": "a"}], "lastScheduleTime": "2024-01-01T00:59:00Z"},
    }
    assert _cronjob_row(cj, NOW)[1:6] == ["@hourly", "Etc/UTC", "True", 1, "60s"]


def test_load_balancer_and_ingress_addresses() -> None:
    svc = {
        "metadata": MD,
        "spec": {
            "type": "LoadBalancer",
            "clusterIP": "10.0.0.1",
            "ports": [{"port": 53, "protocol": "UDP"}],
        },
        "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "lb.example"}]}},
    }
    assert _service_row(svc, NOW)[1:5] == [
        "LoadBalancer",
        "10.0.0.1",
        "1.2.3.4,lb.example",
        "53/UDP",
    ]
    ing = {
        "metadata": MD,
        "spec": {"rules": [{"host": f"h{i}.example"} for i in range(5)]},
        "status": {"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}]}},
    }
    assert _ingress_row(ing, NOW)[2:5] == [
        "h0.example,h1.example,h2.example + 2 more...",
        "5.6.7.8",
        "80",
    ]
