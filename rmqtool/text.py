"""Text from a store made safe for a terminal, for every layer that shows it (the CLI, warnings)."""

from __future__ import annotations


def printable(value: object) -> str:
    """`value` as text a terminal shows and does not obey: every character that is not printable
    (controls such as ESC and BEL, format characters such as bidi overrides, line separators) as
    its Python escape; printable text in any script stays as it is."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def printable_bytes(data: bytes) -> str:
    """Bytes (a body) for a person: UTF-8 text through `printable`; bytes that are not UTF-8 with
    every byte outside printable ASCII as \\xNN (a cut inside the last character is dropped)."""
    try:
        return printable(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        if e.reason == "unexpected end of data" and e.start >= len(data) - 3:
            return printable_bytes(data[: e.start])
        return data.decode("latin-1").encode("unicode_escape").decode("ascii")
