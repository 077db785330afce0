"""The files kubetrio ships beside its code: the CRDs, the kustomize kit, the dashboards, the
Prometheus rules and the example config, all under ``kubetrio.config`` (the repository's
``config/`` folder).

They are read through ``importlib.resources`` only, never by path arithmetic from ``__file__``:
that finds them the same way in a source tree, an editable install and an installed wheel, and
a missing file is then a packaging bug the wheel test catches rather than a user's traceback.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Final

import yaml

from kubetrio.cmd.kustomize import Document, Image, KustomizeError, render

__all__ = [
    "EXAMPLE_CONFIG",
    "MANAGER_IMAGE",
    "KustomizeError",
    "config_root",
    "crd_documents",
    "dump_documents",
    "example_config_text",
    "kit_documents",
]

PACKAGE: Final = "kubetrio.config"
EXAMPLE_CONFIG: Final = "kubetrio.example.yaml"
# The image name config/manager/manager.yaml gives the manager (kubebuilder's controller:latest).
MANAGER_IMAGE: Final = "kubetrio"


def config_root() -> Traversable:
    """The shipped ``config/`` folder."""
    return files(PACKAGE)


def crd_documents() -> list[Document]:
    """The machine CRDs, as ``kubectl apply -k config/crd`` would send them: the files listed
    in ``config/crd/kustomization.yaml``, in its order (one list for kubectl, ``kubetrio
    crds`` and the embedded cluster)."""
    documents = render(config_root(), "crd")
    return [doc for doc in documents if doc["kind"] == "CustomResourceDefinition"]


def kit_documents(images: Sequence[Image] = (), folder: str = "default") -> list[Document]:
    """Everything ``config/<folder>`` deploys, as ``kubectl kustomize config/<folder>`` renders
    it (with ``images`` as an overlay's ``images`` would set them)."""
    return render(config_root(), folder, images)


def example_config_text() -> str:
    """The commented example configuration file."""
    return (config_root() / EXAMPLE_CONFIG).read_text(encoding="utf-8")


def dump_documents(documents: list[Document]) -> str:
    """A multi-document YAML stream ``kubectl apply -f -`` reads; keys keep the files' order."""
    return yaml.safe_dump_all(documents, sort_keys=False, explicit_start=True)
