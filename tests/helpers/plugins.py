"""A 'third-party package' for process tests: a module plus dist-info with entry points, so
``kubetrio run`` finds its controllers exactly as it finds an installed plugin's."""

from __future__ import annotations

from pathlib import Path


def install_plugin(root: Path, source: str, controllers: dict[str, str]) -> Path:
    """Write ``kt_test_plugin`` (``source``) under ``root`` with ``controllers`` (name → setup
    function in the module) as its ``kubetrio.controllers`` entry points; ``root`` is what goes
    on PYTHONPATH."""
    root.mkdir()
    (root / "kt_test_plugin.py").write_text(source)
    info = root / "kt_test_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kt-test-plugin\nVersion: 1.0\n")
    lines = [f"{name} = kt_test_plugin:{setup}" for name, setup in controllers.items()]
    (info / "entry_points.txt").write_text("\n".join(["[kubetrio.controllers]", *lines, ""]))
    return root
