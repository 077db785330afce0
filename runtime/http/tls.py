"""The TLS client context an API client verifies its server with.

What requests (urllib3) used to make, so the switch to trio's own TLS changed nothing a server
can see: TLS 1.2 at least, no compression, no session tickets, post-handshake authentication
allowed, the host name checked against the subject alternative names only, Python 3.13's
strict X.509 verification, ``SSLKEYLOGFILE`` honoured. Trusted: the given CA bundle (file or
directory) alone, else certifi's bundle — never the system store on top of a cluster's own CA.
"""

from __future__ import annotations

import os
import ssl
import sys

import certifi

__all__ = ["client_context"]


def client_context(verify: str | bool | None) -> ssl.SSLContext:
    """``verify``: a CA bundle path, False to skip verification, None for certifi's bundle."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= ssl.OP_NO_SSLv2 | ssl.OP_NO_SSLv3 | ssl.OP_NO_COMPRESSION | ssl.OP_NO_TICKET
    if sys.version_info >= (3, 13):
        context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT
    context.post_handshake_auth = True
    context.hostname_checks_common_name = False
    if keylog := os.environ.get("SSLKEYLOGFILE"):
        context.keylog_filename = os.path.expandvars(keylog)
    if verify is False:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    bundle = verify if isinstance(verify, str) else certifi.where()
    if os.path.isdir(bundle):
        context.load_verify_locations(capath=bundle)
    else:
        context.load_verify_locations(cafile=bundle)
    return context
