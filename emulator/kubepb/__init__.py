"""Protobuf for built-in kinds, as kube-apiserver serves it: the schema (compiled descriptors),
k8s's JSON mapping, the ``k8s\\x00`` envelope and watch framing, and content negotiation."""
