"""kubetrio's small kustomize (cmd/kustomize.py) refuses what it cannot render instead of
rendering something else: a field it does not implement, a resource outside the kit, a folder
without a kustomization, a document without a kind. (What it renders is compared with
``kubectl kustomize`` in tests/cli/test_kit.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubetrio.cmd.kustomize import KustomizeError, image_override, render

CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"


def kit(tmp_path: Path, kustomization: str) -> Path:
    """A kit root whose ``default`` folder has ``kustomization``."""
    (tmp_path / "default").mkdir()
    (tmp_path / "default" / "kustomization.yaml").write_text(kustomization)
    return tmp_path


def test_a_field_it_does_not_implement_is_named(tmp_path: Path) -> None:
    root = kit(tmp_path, "namePrefix: x-\nreplicas: []\nresources: []\n")
    with pytest.raises(KustomizeError) as error:
        render(root, "default")
    assert str(error.value) == (
        "config/default/kustomization.yaml: namePrefix, replicas: "
        "not supported by kubetrio manifests"
    )


def test_a_resource_outside_the_kit_is_refused(tmp_path: Path) -> None:
    root = kit(tmp_path, "resources:\n- ../../elsewhere\n")
    with pytest.raises(KustomizeError, match=r"resource \.\./\.\./elsewhere: outside config/"):
        render(root, "default")


def test_missing_resources_and_folders_without_a_kustomization(tmp_path: Path) -> None:
    root = kit(tmp_path, "resources:\n- gone.yaml\n")
    with pytest.raises(KustomizeError, match=r"resource gone\.yaml: no such file or folder"):
        render(root, "default")
    (root / "bare").mkdir()
    (root / "default" / "kustomization.yaml").write_text("resources:\n- ../bare\n")
    with pytest.raises(KustomizeError, match=r"\.\./bare: the folder has no kustomization\.yaml"):
        render(root, "default")


def test_a_document_without_a_kind_names_its_file(tmp_path: Path) -> None:
    root = kit(tmp_path, "resources:\n- objects.yaml\n")
    (root / "default" / "objects.yaml").write_text(CONFIG_MAP + "---\nname: loose\n")
    with pytest.raises(KustomizeError, match=r"config/default/objects\.yaml: every document"):
        render(root, "default")


def test_nested_folders_and_the_namespace_of_the_outer_level(tmp_path: Path) -> None:
    root = kit(tmp_path, "namespace: apps\nresources:\n- ../base\n- local.yaml\n")
    (root / "default" / "local.yaml").write_text(CONFIG_MAP.replace("settings", "local"))
    (root / "base").mkdir()
    (root / "base" / "kustomization.yaml").write_text("resources:\n- cm.yaml\n")
    (root / "base" / "cm.yaml").write_text(CONFIG_MAP)
    rendered = render(root, "default")
    assert [(d["metadata"]["name"], d["metadata"]["namespace"]) for d in rendered] == [
        ("local", "apps"),
        ("settings", "apps"),
    ]
    assert "namespace" not in render(root, "base")[0]["metadata"]


def test_image_references_split_as_kustomize_edit_set_image_writes_them() -> None:
    assert image_override("kubetrio", "ghcr.io/a/kubetrio:1.2") == {
        "name": "kubetrio",
        "newName": "ghcr.io/a/kubetrio",
        "newTag": "1.2",
    }
    # A registry's port is part of the name, not a tag.
    assert image_override("kubetrio", "localhost:5000/kt") == {
        "name": "kubetrio",
        "newName": "localhost:5000/kt",
    }
    assert image_override("kubetrio", "r/kt:1@sha256:ab")["digest"] == "sha256:ab"
    with pytest.raises(KustomizeError, match="expected NAME"):
        image_override("kubetrio", "")


def test_an_images_entry_it_does_not_implement_is_named(tmp_path: Path) -> None:
    root = kit(tmp_path, "images:\n- {name: app, newName: other, tagSuffix: x}\n")
    with pytest.raises(KustomizeError, match=r"images\[0\]: tagSuffix: not supported"):
        render(root, "default")
