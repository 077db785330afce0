"""The machine controller's pure rules: node template sync, health, bootstrap tokens."""

from __future__ import annotations

import gzip
import re
from datetime import UTC, datetime
from typing import Any

import msgspec

from kubetrio.api.core import Node, NodeCondition
from kubetrio.api.machine import NodeTemplate
from kubetrio.controllers.machine.bootstrap import (
    PLACEHOLDER,
    new_token_secret,
    render_user_data,
    token_id,
    token_secret,
    token_secret_name,
)
from kubetrio.controllers.machine.health import is_healthy
from kubetrio.controllers.machine.nodetemplate import (
    LAST_APPLIED_ANNOTATION,
    last_applied,
    template_change,
)


def node(labels: dict[str, str], annotations: dict[str, str], taints: list[dict[str, Any]]) -> Node:
    doc = {
        "metadata": {"name": "n", "labels": labels, "annotations": annotations},
        "spec": {"taints": taints},
    }
    return msgspec.json.decode(msgspec.json.encode(doc), type=Node)


def template(
    labels: dict[str, str], annotations: dict[str, str], taints: list[dict[str, Any]]
) -> NodeTemplate:
    doc = {"metadata": {"labels": labels, "annotations": annotations}, "spec": {"taints": taints}}
    return msgspec.json.decode(msgspec.json.encode(doc), type=NodeTemplate)


def test_first_sync_sets_template_keys_and_records_them() -> None:
    n = node({"kubernetes.io/hostname": "n"}, {}, [])
    t = template(
        {"pool": "a"}, {"team": "x"}, [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]
    )
    change = template_change(n, t)
    assert change.changed
    assert change.labels == {"pool": "a"}
    assert change.annotations["team"] == "x"
    assert change.taints == [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]
    patch = change.merge_patch("42")
    assert patch["metadata"]["resourceVersion"] == "42"
    assert (
        msgspec.json.decode(
            patch["metadata"]["annotations"][LAST_APPLIED_ANNOTATION], type=NodeTemplate
        )
        == t
    )


def test_removed_template_keys_go_and_third_party_keys_stay() -> None:
    before = template(
        {"pool": "a", "old": "1"},
        {"team": "x", "gone": "y"},
        [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}],
    )
    record = msgspec.json.encode(before).decode()
    n = node(
        {"pool": "a", "old": "1", "kubernetes.io/hostname": "n"},
        {
            "team": "x",
            "gone": "y",
            "csi.volume.kubernetes.io/nodeid": "{}",
            LAST_APPLIED_ANNOTATION: record,
        },
        [
            {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
        ],
    )
    after = template({"pool": "b"}, {"team": "x"}, [])
    change = template_change(n, after)
    assert change.labels == {"pool": "b", "old": None}
    assert change.annotations["gone"] is None
    assert "csi.volume.kubernetes.io/nodeid" not in change.annotations
    assert change.taints == [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]


def test_in_sync_node_needs_no_write() -> None:
    t = template({"pool": "a"}, {}, [{"key": "k", "effect": "NoExecute"}])
    record = msgspec.json.encode(t).decode()
    n = node(
        {"pool": "a"}, {LAST_APPLIED_ANNOTATION: record}, [{"key": "k", "effect": "NoExecute"}]
    )
    assert not template_change(n, t).changed


def test_unreadable_record_counts_as_nothing_applied() -> None:
    n = node({"pool": "a"}, {LAST_APPLIED_ANNOTATION: "{not json"}, [])
    assert last_applied(n) == NodeTemplate()
    change = template_change(n, template({}, {}, []))
    assert change.labels == {}, "unrecorded keys are never removed"


def condition(kind: str, status: str) -> NodeCondition:
    return NodeCondition(type=kind, status=status)


def test_health_needs_ready_and_no_watched_problem() -> None:
    watched = ("KernelDeadlock", "ReadonlyFilesystem")
    assert not is_healthy([], watched)
    assert is_healthy([condition("Ready", "True")], watched)
    assert not is_healthy([condition("Ready", "Unknown")], watched)
    assert not is_healthy(
        [condition("Ready", "True"), condition("ReadonlyFilesystem", "True")], watched
    )
    assert not is_healthy(
        [condition("Ready", "True"), condition("KernelDeadlock", "Unknown")], watched
    )
    assert is_healthy([condition("Ready", "True"), condition("DiskPressure", "True")], watched)


def test_bootstrap_token_shape_and_secret() -> None:
    # MCM's id collides for names differing only in their last two characters; ours must not.
    assert token_id("pool-0001") != token_id("pool-0002")
    assert token_id("m-1", "a") != token_id("m-1", "b")
    assert token_id("m-1", "a") == token_id("m-1", "a")
    assert token_secret_name("m-1") == f"bootstrap-token-{token_id('m-1')}"
    secrets_made = {new_token_secret() for _ in range(50)}
    assert len(secrets_made) == 50
    assert all(re.fullmatch(r"[a-z0-9]{16}", s) for s in secrets_made)
    assert re.fullmatch(r"[a-z0-9]{6}", token_id("x"))
    expires = datetime(2026, 11, 23, 12, 20, tzinfo=UTC)
    body = token_secret("m-1", "s" * 16, expires)
    assert body["type"] == "bootstrap.kubernetes.io/token"
    assert body["metadata"]["namespace"] == "kube-system"
    assert body["stringData"]["expiration"] == "2026-11-23T12:20:00Z"


def test_user_data_gets_the_token_in_plain_or_url_encoded_marker() -> None:
    script = f"join --token {PLACEHOLDER}\ncurl 'https://x/?t=%3C%3CBOOTSTRAP_TOKEN%3E%3E'"
    rendered = render_user_data(script.encode(), "abcdef.0123456789abcdef")
    assert PLACEHOLDER.encode() not in rendered and b"%3C%3C" not in rendered
    assert rendered.count(b"abcdef.0123456789abcdef") == 2


def test_binary_user_data_passes_through_untouched() -> None:
    compressed = gzip.compress(b"#cloud-config\nruncmd: [kubeadm join]\n")
    assert render_user_data(compressed, "abcdef.0123456789abcdef") == compressed
