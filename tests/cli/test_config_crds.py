"""config/crd is the generator's output for kubetrio's own kinds, byte for byte: the YAML can
never drift from the types the controllers read."""

from __future__ import annotations

from pathlib import Path

from kubetrio.cmd.crd import OWN_KINDS, render
from kubetrio.emulator.schema_structural import check_crd
from kubetrio.runtime.gen.crd import classes_of, crd_for

CRD_DIR = Path(__file__).resolve().parents[2] / "config" / "crd"


def test_config_crd_is_the_generated_output() -> None:
    crds = crd_for(*classes_of(OWN_KINDS))
    expected = dict(render(crds, list(OWN_KINDS)))
    on_disk = {path.name: path.read_text(encoding="utf-8") for path in CRD_DIR.glob("*_*.yaml")}
    assert sorted(on_disk) == sorted(expected)
    for name, text in expected.items():
        assert on_disk[name] == text, (
            f"config/crd/{name} is stale: run kubetrio crd generate {' '.join(OWN_KINDS)} "
            f"-o config/crd"
        )
    for crd in crds:
        assert check_crd(crd) == [], crd["metadata"]["name"]
