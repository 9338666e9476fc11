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


def printable_bytes(data: bytes, whole: bool = False) -> str:
    """Bytes (a body) for a person, the one rule of every view: UTF-8 text through `printable`; bytes
    that are not UTF-8 with every byte outside printable ASCII as \\xNN. A preview (not `whole`) drops
    a character its cut ends inside; a whole body that ends inside one is not UTF-8."""
    try:
        return printable(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        if not whole and e.reason == "unexpected end of data" and e.start >= len(data) - 3:
            return printable_bytes(data[: e.start])
        return data.decode("latin-1").encode("unicode_escape").decode("ascii")


def iso_time(ms: int | None) -> str:
    """Epoch milliseconds as a person reads a time everywhere rmqtool shows one: ISO 8601 in UTC to the
    millisecond with `Z` ("2026-11-22T11:43:32.044Z"); "-" when unknown; the number itself when no
    calendar holds it."""
    if ms is None:
        return "-"
    if not _CALENDAR[0] <= ms <= _CALENDAR[1]:
        return str(ms)
    from datetime import timedelta

    t = _EPOCH + timedelta(milliseconds=ms)  # not numpy: importing it is a card's largest cost
    return f"{t.year:04d}-{t:%m-%dT%H:%M:%S}.{t.microsecond // 1000:03d}Z"


def iso_times(values) -> list[str]:
    """`iso_time` of many epoch-millisecond values at once (a table's column)."""
    import numpy as np

    ms = np.fromiter(values, dtype=np.int64) if not isinstance(values, np.ndarray) else values.astype(np.int64)
    if ((ms >= _CALENDAR[0]) & (ms <= _CALENDAR[1])).all():
        return [t + "Z" for t in np.datetime_as_string(ms.astype("datetime64[ms]")).tolist()]
    return [iso_time(int(v)) for v in ms]


_EPOCH = __import__("datetime").datetime(1970, 1, 1)
_CALENDAR = (-62135596800000, 253402300799999)  # years 1 .. 9999, the ones ISO 8601 writes in four digits


def duration(ms: int | None) -> str:
    """A span of time for a glance: "850 ms", "12s", "3m 20s", "5h 2m", "3d 7h"; "-" when unknown."""
    if ms is None:
        return "-"
    if abs(ms) < 1000:
        return f"{ms} ms"
    sign, left = ("-" if ms < 0 else ""), abs(ms) // 1000
    parts = []
    for unit, seconds in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= seconds or (parts and len(parts) < 2):
            parts.append(f"{left // seconds}{unit}")
            left %= seconds
        if len(parts) == 2:
            break
    return sign + " ".join(parts)
