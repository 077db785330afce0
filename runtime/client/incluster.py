"""The pod's own ServiceAccount as a kubeconfig, as client-go's ``rest.InClusterConfig``.

pykube-ng's ``from_service_account`` copies the token into the config once; a projected token
is replaced by the kubelet (hourly by default) and the old one stops working when it expires,
so a long-running manager would start failing after its first token's lifetime. Here the user
names the token *file* (``tokenFile``), which ``kubetrio.runtime.client.filecreds`` re-reads
as it changes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pykube

from kubetrio.runtime.client.execplugin import CredentialError
from kubetrio.runtime.client.filecreds import read_token_file

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def _join_host_port(host: str, port: str) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def pod_namespace(directory: str | None = None) -> str | None:
    """The namespace of the pod this process runs in, from its ServiceAccount mount; None
    outside a pod. controller-runtime puts its leader-election Lease there by default."""
    try:
        text = (Path(directory or SERVICE_ACCOUNT_DIR) / "namespace").read_text()
    except OSError:
        return None
    return text.strip() or None


def in_cluster_config(
    directory: str | None = None, environ: Mapping[str, str] | None = None
) -> pykube.KubeConfig:
    """``directory`` holds ``token``, ``ca.crt`` and ``namespace`` (the mounted ServiceAccount
    by default); ``environ`` gives KUBERNETES_SERVICE_HOST/PORT (the process's by default)."""
    env = os.environ if environ is None else environ
    root = Path(directory or SERVICE_ACCOUNT_DIR)
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise CredentialError(
            "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
            "KUBERNETES_SERVICE_PORT must be defined"
        )
    read_token_file(root / "token")  # fail now, with the path, rather than on first use
    cluster: dict[str, str] = {"server": f"https://{_join_host_port(host, port)}"}
    if (root / "ca.crt").is_file():  # without it client-go trusts the system's roots
        cluster["certificate-authority"] = str(root / "ca.crt")
    try:
        namespace = (root / "namespace").read_text().strip() or "default"
    except OSError:
        namespace = "default"
    doc = {
        "clusters": [{"name": "in-cluster", "cluster": cluster}],
        "users": [{"name": "in-cluster", "user": {"tokenFile": str(root / "token")}}],
        "contexts": [
            {
                "name": "in-cluster",
                "context": {"cluster": "in-cluster", "user": "in-cluster", "namespace": namespace},
            }
        ],
        "current-context": "in-cluster",
    }
    return pykube.KubeConfig(doc)
