"""The documentation site builds strictly and renders in a real browser, and the API reference it
generates has something to say about every public name of the front doors.

The browser is Debian's chromium, headless, reading the built site from a local HTTP server;
``--dump-dom`` prints the document as the browser holds it after loading, which the checks read
as text. ``.ci/run`` installs chromium and the ``docs`` extra; elsewhere the test says how to
get what is missing and skips.
"""

from __future__ import annotations

import functools
import html
import importlib
import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kubetrio.emulator.gaps import GAPS
from kubetrio.runtime.util.clock import now
from kubetrio.testing.plugin import in_ci

ROOT = Path(__file__).resolve().parents[2]
BROWSERS = ("chromium", "chromium-browser")


def _documented_modules() -> list[str]:
    """The modules the API reference renders: its pages' ``::: module`` directives."""
    pages = sorted((ROOT / "docs" / "reference").glob("*.md"))
    return [m for page in pages for m in re.findall(r"^::: ([\w.]+)$", page.read_text(), re.M)]


def _missing(what: str) -> None:
    """CI installs every tool this test needs: there a missing one is a failure."""
    if in_ci():
        pytest.fail(what)
    pytest.skip(what)


def _public_names() -> Iterator[tuple[str, object]]:
    """Every public name of the documented modules (their ``__all__``, else what each defines),
    and the public methods of their classes."""
    for name in _documented_modules():
        module = importlib.import_module(name)
        names = getattr(module, "__all__", None) or [
            n
            for n, v in vars(module).items()
            if not n.startswith("_") and getattr(v, "__module__", None) == name
        ]
        for attribute in names:
            value = getattr(module, attribute)
            if not (inspect.isclass(value) or inspect.isfunction(value)):
                continue  # type aliases and markers: documented where they are assigned
            yield f"{name}.{attribute}", value
            if inspect.isclass(value):
                for member, method in vars(value).items():
                    if not member.startswith("_") and inspect.isfunction(method):
                        yield f"{name}.{attribute}.{member}", method


def test_the_reference_covers_the_front_doors() -> None:
    assert {"kubetrio.runtime", "kubetrio.testing", "kubetrio.api"} <= set(_documented_modules())


def test_every_public_name_of_the_front_doors_has_a_docstring() -> None:
    """The reference is generated from docstrings: an undocumented name is an empty entry."""
    missing = [
        name
        for name, value in _public_names()
        # a dataclass without a docstring gets its signature as one
        if not (inspect.getdoc(value) or "").strip()
        or (inspect.isclass(value) and (value.__doc__ or "").startswith(f"{value.__name__}("))
    ]
    assert missing == []


def _text(dom: str) -> str:
    """What a reader sees of a document: no scripts or styles, no tags, spaces collapsed."""
    dom = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.DOTALL | re.IGNORECASE)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", dom)))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built as CI builds it (``mkdocs build --strict``)."""
    if importlib.util.find_spec("mkdocs") is None:
        _missing("mkdocs is not installed: pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("docs") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    return out


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The built site on a loopback HTTP server, as a reader's browser would fetch it."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=site))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Headless chromium's command line, up to the URL."""
    binary = os.environ.get("CHROMIUM") or next(filter(None, map(shutil.which, BROWSERS)), None)
    if binary is None:
        _missing("chromium is not installed: apt-get install chromium (or set $CHROMIUM)")
    profile = tmp_path_factory.mktemp("chromium-profile")
    return [
        str(binary),
        "--headless",
        "--no-sandbox",  # as root (CI) chromium refuses to start with its sandbox
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--dump-dom",
    ]


def _render(browser: list[str], url: str) -> str:
    shown = subprocess.run(
        [*browser, url], capture_output=True, text=True, timeout=120, check=False
    )
    assert shown.returncode == 0, shown.stderr
    return _text(shown.stdout)


@pytest.mark.process
@pytest.mark.slow
def test_the_site_renders_in_a_browser(site: Path, served: str, browser: list[str]) -> None:
    pages = sorted(site.rglob("index.html"))
    assert len(pages) >= 20, [str(p.relative_to(site)) for p in pages]

    home = _render(browser, f"{served}/")
    assert "Kubernetes controllers in Python, the controller-runtime way" in home, home
    for entry in ("Quick start", "Tutorial", "API reference", "Coming from"):
        assert entry in home, entry

    tutorial = _render(browser, f"{served}/tutorial/")
    assert "your own controller, from an empty folder" in tutorial, tutorial
    assert "class Greeting" in tutorial  # its code blocks are there, highlighted or not
    assert "greeter/controller.py" in tutorial  # titled with the file each one is saved as

    reference = _render(browser, f"{served}/reference/runtime/")
    # Generated from the docstrings: each name with what its docstring says.
    summary = (inspect.getdoc(now) or "").split("(")[0].strip()
    assert summary and summary in reference, (summary, reference)
    for name in ("Manager", "create_or_patch", "seconds_since", "TerminalError"):
        assert name in reference, name

    gaps = _render(browser, f"{served}/emulator-gaps/")
    probes = [gap.conformance[0] for gap in GAPS if gap.conformance]
    assert probes and probes[0] in gaps, "the gaps table is not filled in from emulator/gaps.py"
