"""kubebuilder's ``config/`` folder, importable as ``kubetrio.config`` only so that the wheel
carries it: the CLI reads the CRDs, the kustomize kit, the dashboards and the rules through
``importlib.resources`` (``kubetrio.cmd.assets``), which finds them the same way in a source tree,
an editable install and a wheel. There is no code here."""
