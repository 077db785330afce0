"""Kubernetes Events: the recorder controllers use and client-go's correlator (aggregation
and spam filtering) in front of it."""
