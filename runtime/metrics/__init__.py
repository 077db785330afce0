"""Exposing the manager: ``/metrics``, ``/healthz`` and ``/readyz`` on trio, ``/metrics`` over TLS
for authorized readers, and the lock-free metric families the hot paths update."""
