"""An in-process Kubernetes API server emulator for tests and the embedded default."""
