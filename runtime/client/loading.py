"""Which API server, as whom: client-go's default loading rules, for any program.

controller-runtime's ``config.GetConfig()`` looks, in order, at the ``--kubeconfig`` flag, the
``$KUBECONFIG`` variable, the pod's own ServiceAccount (in-cluster) and ``~/.kube/config``;
``--master`` overrides the chosen kubeconfig's server. A controller that works under ``kubetrio
run`` therefore works unchanged from a user's own script, in a pod or on a laptop, because both
load their client here.
"""

from __future__ import annotations

import os
from typing import Any

from kubetrio.runtime.client.kubeconfig import KubeconfigError, kubeconfig_path
from kubetrio.runtime.client.typed import Client

__all__ = ["load_client"]


def load_client(
    kubeconfig: str | None = None,
    context: str | None = None,
    master: str | None = None,
    *,
    service_account_dir: str | None = None,
    **options: Any,
) -> Client:
    """A client by client-go's loading rules: ``kubeconfig`` (a path), else ``$KUBECONFIG``,
    else the in-cluster ServiceAccount when ``KUBERNETES_SERVICE_HOST`` is set, else
    ``~/.kube/config``; ``context`` picks a context of the kubeconfig and ``master`` overrides
    its server (with no kubeconfig at all, ``master`` alone is used, unauthenticated).
    ``options`` go to the client (``qps``, ``burst``, ``timeout``, ``registry``, ``component``);
    ``service_account_dir`` replaces the pod's ServiceAccount mount.

    Raises ``KubeconfigError`` with one line saying what was looked for when nothing is found.
    """
    if kubeconfig or os.environ.get("KUBECONFIG"):
        return Client.from_kubeconfig(kubeconfig, context, master, **options)
    default = kubeconfig_path()
    if master and not default.exists():
        return Client.from_url(master, **options)  # no kubeconfig to take a user from
    if os.environ.get("KUBERNETES_SERVICE_HOST") and not master:
        return Client.in_cluster(service_account_dir, **options)
    if not default.exists():
        raise KubeconfigError(
            "no kubeconfig: give --kubeconfig or set KUBECONFIG (not in a pod: "
            f"KUBERNETES_SERVICE_HOST is unset; {default} does not exist)"
        )
    return Client.from_kubeconfig(None, context, master, **options)
