"""Typed Kubernetes API objects and the kind registry shared by client, informers and emulator."""
