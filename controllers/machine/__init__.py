"""The machine controller: Gardener machine-controller-manager's machine lifecycle on kubetrio."""
