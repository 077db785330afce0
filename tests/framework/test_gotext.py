"""``go_quote`` renders as Go's ``%q``: the expected strings are what ``fmt.Sprintf("%q", s)``
prints for each input."""

from __future__ import annotations

import pytest

from kubetrio.runtime.util.gotext import go_quote


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ("m-1", '"m-1"'),
        ("", '""'),
        ("it's", '"it\'s"'),  # a single quote needs no escape in Go
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("tab\tnew\nline", '"tab\\tnew\\nline"'),
        ("\x00\x7f", '"\\x00\\x7f"'),
        ("héllo ☃", '"héllo ☃"'),  # printable non-ASCII stays as it is
        ("\u00a0", '"\\u00a0"'),  # a no-break space is not printable to Go
        ("\U000e0001", '"\\U000e0001"'),
        (42, '"42"'),
    ],
)
def test_go_quote_is_go_s_percent_q(value: object, quoted: str) -> None:
    assert go_quote(value) == quoted
