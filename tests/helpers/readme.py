"""The documentation's complete controller example (docs/writing-controllers.md) loaded as a
module: tests/packaging/test_readme.py runs it as printed, and the tests on both API servers run
the same code on each."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

# The page the example lives on (it was the README's until the documentation site).
README = Path(__file__).resolve().parents[2] / "docs" / "writing-controllers.md"


def readme_controller(tmp_path: Path) -> ModuleType:
    text = README.read_text()
    block = re.search(
        r"<!-- readme-controller:start -->\n```python\n(.*?)```\n<!-- readme-controller:end -->",
        text,
        re.S,
    )
    assert block is not None, f"{README.name} lost its controller example"
    source = tmp_path / "readme_controller.py"
    source.write_text(block.group(1))
    spec = importlib.util.spec_from_file_location("readme_controller", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
