"""Go's text formatting where tools match on it: ``%q`` (``strconv.Quote``).

MCM, kubectl and client-go write names into messages with ``%q``; operators' scripts and tools
written against them match those exact strings, so a port must quote as Go does — double quotes
and Go's escapes — never with Python's ``repr`` (single quotes, Python's escapes).
"""

from __future__ import annotations

_ESCAPES = {
    "\a": r"\a",
    "\b": r"\b",
    "\f": r"\f",
    "\n": r"\n",
    "\r": r"\r",
    "\t": r"\t",
    "\v": r"\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(value: object) -> str:
    """``fmt.Sprintf("%q", s)`` of ``str(value)``: printable characters as they are, the
    rest as Go escapes them (``\\x`` below U+0080, else ``\\u`` or ``\\U``)."""
    out = ['"']
    for char in str(value):
        escaped = _ESCAPES.get(char)
        if escaped is not None:
            out.append(escaped)
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)
