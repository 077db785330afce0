"""Whether two providerIDs name the same VM.

A Machine's providerID is written by its driver, its Node's by the kubelet or the cloud
controller, and the two need not spell one VM alike: on AWS the Node carries
``aws:///<zone>/<instance-id>`` and MCM's provider-aws ``aws:///<region>/<instance-id>``. What
both keep is the provider's scheme and, last, the VM's own ID — which is also how provider-aws
reads a providerID back — so that is what is compared.
"""

from __future__ import annotations


def vm_identity(provider_id: str) -> tuple[str, str]:
    """(scheme, the VM's own ID: the last path segment)."""
    scheme, separator, rest = provider_id.partition("://")
    if not separator:
        return "", provider_id
    return scheme, rest.rstrip("/").rpartition("/")[2]


def same_vm(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` name one VM; two empty IDs name none."""
    if not a or not b:
        return False
    return a == b or vm_identity(a) == vm_identity(b)
