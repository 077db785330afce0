"""Kubernetes Events: the recorder controllers use and client-go's correlator (aggregation
and spam filtering) in front of it."""

from kubetrio.runtime.events.recorder import RBAC, EventRecorder

__all__ = ["RBAC", "EventRecorder"]
