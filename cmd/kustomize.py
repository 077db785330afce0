"""The few kustomize features the shipped kit uses, so ``kubetrio manifests`` renders
``config/default`` from the wheel without a kustomize binary: ``resources`` (files and
folders with their own kustomization), ``namespace``, and kustomize's default (legacy) output
order. Anything else in a kustomization is refused by name rather than silently ignored, so the
kit cannot grow a feature this renderer would drop; a test compares the output with
``kubectl kustomize`` object by object. ``images`` too (kustomize's image transformer), since
an image name is the one thing every deployment of the kit changes; and ``patches`` given as a
file of RFC 6902 operations on a target picked by kind and name, which is how an overlay adds
the webhook server to the manager (kubebuilder's ``manager_webhook_patch.yaml``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from importlib.resources.abc import Traversable
from typing import Any, Final

import jsonpatch
import yaml

__all__ = ["Image", "KustomizeError", "image_override", "ordered", "render"]

KUSTOMIZATION: Final = "kustomization.yaml"
_KNOWN_FIELDS: Final = frozenset(
    {"apiVersion", "kind", "resources", "namespace", "images", "patches"}
)
_IMAGE_FIELDS: Final = frozenset({"name", "newName", "newTag", "digest"})
_PATCH_FIELDS: Final = frozenset({"path", "target"})
_TARGET_FIELDS: Final = frozenset({"kind", "name"})
# An image reference: the name, then ":tag" or "@digest" (a registry's ":port" is in the name).
_REFERENCE: Final = re.compile(r"^(?P<name>[^@]+?)(?P<rest>(?::[^:/@]+)?(?:@.+)?)$")

# Built-in kinds that have no namespace (kustomize knows them from its OpenAPI schema); any
# other kind, a custom resource's included, is namespaced as kustomize assumes.
CLUSTER_SCOPED: Final = frozenset(
    {
        "APIService",
        "CertificateSigningRequest",
        "ClusterRole",
        "ClusterRoleBinding",
        "CSIDriver",
        "CSINode",
        "CustomResourceDefinition",
        "IngressClass",
        "MutatingWebhookConfiguration",
        "Namespace",
        "Node",
        "PersistentVolume",
        "PriorityClass",
        "RuntimeClass",
        "StorageClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "VolumeAttachment",
    }
)

# kustomize's legacy order (its default): what others depend on first, webhooks last, every
# other kind in between.
_FIRST: Final = (
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
)
_LAST: Final = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")

Document = dict[str, Any]
# libyaml's safe loader where PyYAML was built with it: the CRDs are read by every machine test
# and each embedded start, and it parses them several times faster than the pure-Python one.
_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
Image = Mapping[str, str]  # one ``images`` entry: name, and newName / newTag / digest


class KustomizeError(Exception):
    """A kustomization this renderer cannot follow; ``str(error)`` names the file and field."""


def render(
    root: Traversable, folder: str = "default", images: Sequence[Image] = ()
) -> list[Document]:
    """The objects ``kubectl kustomize config/<folder>`` prints, in its order; ``root`` is the
    kit (``config/``), which every resource path must stay inside. ``images`` apply last, as
    an overlay's would."""
    documents = _build(root, _parts(folder, "", folder))
    _set_images(documents, images, "images")
    return ordered(documents)


def ordered(documents: Iterable[Document]) -> list[Document]:
    """``documents`` in kustomize's default output order."""
    return sorted(documents, key=_order)


def image_override(name: str, reference: str) -> Image:
    """The ``images`` entry that makes image ``name`` ``reference`` (``registry/app:1.2`` or
    ``registry/app@sha256:…``), as ``kustomize edit set image name=reference`` writes it."""
    match = _REFERENCE.match(reference)
    if match is None or not match.group("name"):
        raise KustomizeError(f"image {reference!r}: expected NAME[:TAG][@DIGEST]")
    entry = {"name": name, "newName": match.group("name")}
    tag, _, digest = match.group("rest").partition("@")
    if digest:
        entry["digest"] = digest
    elif tag:
        entry["newTag"] = tag.removeprefix(":")
    return entry


def _build(root: Traversable, folder: tuple[str, ...]) -> list[Document]:
    label = "/".join(("config", *folder))
    where = f"{label}/{KUSTOMIZATION}"
    kustomization = yaml.safe_load(_at(root, folder, KUSTOMIZATION).read_text(encoding="utf-8"))
    if not isinstance(kustomization, dict):
        raise KustomizeError(f"{where}: expected a mapping")
    unknown = sorted(set(kustomization) - _KNOWN_FIELDS)
    if unknown:
        raise KustomizeError(f"{where}: {', '.join(unknown)}: not supported by kubetrio manifests")
    documents: list[Document] = []
    for entry in kustomization.get("resources") or []:
        parts = _parts("/".join(folder), str(entry), where)
        target = _at(root, parts)
        if target.is_dir():
            if not (target / KUSTOMIZATION).is_file():
                message = f"resource {entry}: the folder has no {KUSTOMIZATION}"
                raise KustomizeError(f"{where}: {message}")
            documents.extend(_build(root, parts))
        elif target.is_file():
            documents.extend(_load(target, "/".join(("config", *parts))))
        else:
            raise KustomizeError(f"{where}: resource {entry}: no such file or folder")
    for index, entry in enumerate(kustomization.get("patches") or []):
        _patch(root, folder, documents, entry, f"{where}: patches[{index}]")
    namespace = kustomization.get("namespace")
    if namespace is not None:
        _set_namespace(documents, str(namespace))
    _set_images(documents, kustomization.get("images") or [], f"{where}: images")
    return documents


def _parts(base: str, entry: str, where: str) -> tuple[str, ...]:
    """``entry`` relative to the folder ``base`` as path parts from the kit's root; a path
    leaving the kit is refused (a wheel holds nothing outside it)."""
    parts: list[str] = []
    for part in f"{base}/{entry}".split("/"):
        if part == "..":
            if not parts:
                raise KustomizeError(f"{where}: resource {entry}: outside config/")
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return tuple(parts)


def _at(root: Traversable, parts: Iterable[str], *more: str) -> Traversable:
    target = root
    for part in (*parts, *more):
        target = target / part
    return target


def _load(path: Traversable, label: str) -> list[Document]:
    documents: list[Document] = []
    for document in yaml.load_all(path.read_text(encoding="utf-8"), Loader=_LOADER):
        if document is None:
            continue
        if not isinstance(document, dict) or not document.get("kind"):
            raise KustomizeError(f"{label}: every document must be an object with a kind")
        documents.append(document)
    return documents


def _patch(
    root: Traversable, folder: tuple[str, ...], documents: list[Document], entry: Any, where: str
) -> None:
    """kustomize's patch transformer for a JSON 6902 patch file: its operations apply to each
    object matching the target's kind (and name, when given); a target matching nothing is an
    error, as it is to kustomize."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("path"), str):
        raise KustomizeError(f"{where}: expected a mapping with a path")
    unknown = sorted(set(entry) - _PATCH_FIELDS)
    target = entry.get("target")
    if not isinstance(target, Mapping) or not isinstance(target.get("kind"), str):
        raise KustomizeError(f"{where}: target: expected a mapping with a kind")
    unknown += sorted(f"target.{key}" for key in set(target) - _TARGET_FIELDS)
    if unknown:
        raise KustomizeError(f"{where}: {', '.join(unknown)}: not supported")
    parts = _parts("/".join(folder), entry["path"], where)
    label = "/".join(("config", *parts))
    operations = yaml.safe_load(_at(root, parts).read_text(encoding="utf-8"))
    if not isinstance(operations, list):
        raise KustomizeError(f"{label}: expected a list of JSON patch operations")
    matched = False
    for index, doc in enumerate(documents):
        name = (doc.get("metadata") or {}).get("name")
        if doc["kind"] != target["kind"] or target.get("name", name) != name:
            continue
        try:
            documents[index] = jsonpatch.apply_patch(doc, operations)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as error:
            raise KustomizeError(f"{label}: {doc['kind']} {name}: {error}") from None
        matched = True
    if not matched:
        raise KustomizeError(f"{where}: target {dict(target)}: no object matches")


def _set_namespace(documents: Iterable[Document], namespace: str) -> None:
    """kustomize's namespace transformer: every namespaced object moves to ``namespace``, a
    Namespace object is renamed to it, and a ServiceAccount subject of a binding follows its
    ServiceAccount when the subject names one of these objects (in its old namespace, or with
    no namespace at all)."""
    documents = list(documents)
    moved = {
        (doc["metadata"]["name"], doc["metadata"].get("namespace") or "default")
        for doc in documents
        if doc["kind"] == "ServiceAccount"
    }
    moved_names = {name for name, _ in moved}
    for doc in documents:
        metadata = doc.setdefault("metadata", {})
        if doc["kind"] == "Namespace":
            metadata["name"] = namespace
        elif doc["kind"] not in CLUSTER_SCOPED:
            metadata["namespace"] = namespace
        if doc["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            for subject in doc.get("subjects") or []:
                if subject.get("kind") != "ServiceAccount":
                    continue
                name, old = subject.get("name"), subject.get("namespace")
                if (old is None and name in moved_names) or (name, old) in moved:
                    subject["namespace"] = namespace


def _set_images(documents: Iterable[Document], images: Sequence[Any], where: str) -> None:
    """kustomize's image transformer on the containers of pods and pod templates: an image
    whose name is an entry's ``name`` gets its ``newName``, its ``newTag`` or ``digest`` (a
    digest replaces the tag), keeping what the entry does not set."""
    for index, entry in enumerate(images):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise KustomizeError(f"{where}[{index}]: expected a mapping with a name")
        unknown = sorted(set(entry) - _IMAGE_FIELDS)
        if unknown:
            raise KustomizeError(f"{where}[{index}]: {', '.join(unknown)}: not supported")
        for container in _containers(documents):
            image = container.get("image")
            match = _REFERENCE.match(image) if isinstance(image, str) else None
            if match is None or match.group("name") != entry["name"]:
                continue
            rest = match.group("rest")
            if "digest" in entry:
                rest = f"@{entry['digest']}"
            elif "newTag" in entry:
                rest = f":{entry['newTag']}"
            container["image"] = entry.get("newName", match.group("name")) + rest


def _containers(documents: Iterable[Document]) -> Iterable[dict[str, Any]]:
    for doc in documents:
        spec = doc.get("spec") or {}
        pod = spec if doc["kind"] == "Pod" else (spec.get("template") or {}).get("spec") or {}
        for key in ("initContainers", "containers"):
            for container in pod.get(key) or []:
                if isinstance(container, dict):
                    yield container


def _order(doc: Document) -> tuple[int, str, str, str]:
    kind = str(doc["kind"])
    if kind in _FIRST:
        rank = _FIRST.index(kind)
    elif kind in _LAST:
        rank = len(_FIRST) + 1 + _LAST.index(kind)
    else:
        rank = len(_FIRST)
    metadata = doc.get("metadata") or {}
    group_kind = f"{doc.get('apiVersion', '')}|{kind}"
    return rank, group_kind, str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
