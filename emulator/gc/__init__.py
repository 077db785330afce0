"""Garbage collection as kube-apiserver and kube-controller-manager make it: the deletion
options that turn into ``orphan`` / ``foregroundDeletion`` finalizers (``policy``), the
ownerReferences rules (``ownerrefs``), and the collector that acts on them (``collector``)."""
