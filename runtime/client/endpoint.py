"""How to reach the API server a kubeconfig's cluster names: the CA bundle to trust and the
proxy to go through, read as client-go reads them.

The CA is the cluster's ``certificate-authority`` (file or data), unless
``insecure-skip-tls-verify`` is set; ``PYKUBE_SSL_CERTIFICATE_AUTHORITY`` overrides both, as it
did when pykube-ng's session sent the requests. The proxy is the cluster's ``proxy-url`` when
set, else ``HTTPS_PROXY``/``HTTP_PROXY`` minus ``NO_PROXY``
(``kubetrio.runtime.http.proxy``); a proxy that cannot be used is refused here, at load,
naming the field or the variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import pykube

from kubetrio.runtime.client.kubeconfig import KubeconfigError
from kubetrio.runtime.http.proxy import Proxy, proxy_from_environment

__all__ = ["cluster_proxy", "verify_option"]


def verify_option(config: pykube.KubeConfig) -> str | bool | None:
    """The CA bundle path to verify the server with; False to skip verification; None for the
    default bundle."""
    forced = os.environ.get("PYKUBE_SSL_CERTIFICATE_AUTHORITY")
    if forced is not None:
        return forced
    cluster = config.cluster
    if "certificate-authority" in cluster:
        return str(cluster["certificate-authority"].filename())
    if "insecure-skip-tls-verify" in cluster:
        return not cluster["insecure-skip-tls-verify"]
    return None


def cluster_proxy(
    config: pykube.KubeConfig, environ: Mapping[str, str] | None = None
) -> Proxy | None:
    """The proxy requests to the current cluster go through, if any (``environ``: the
    process's environment by default). Raises ``KubeconfigError`` naming the field or the
    variable when that proxy cannot be used."""
    cluster = config.cluster
    url = str(cluster["server"])
    if cluster.get("proxy-url"):
        name = config.contexts[config.current_context].get("cluster")
        try:
            return Proxy.parse(str(cluster["proxy-url"]))
        except ValueError as error:
            raise KubeconfigError(f"clusters[{name}].proxy-url: {error}") from None
    try:
        return proxy_from_environment(url, os.environ if environ is None else environ)
    except ValueError as error:
        raise KubeconfigError(f"proxy for {url}: {error}") from None
