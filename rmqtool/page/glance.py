"""The page's head: the store at a glance (what `info` says of it) and the findings block."""

from __future__ import annotations

from rmqtool.page.svg import esc, human_bytes
from rmqtool.page.table import details
from rmqtool.text import iso_time

NOT_CHECKED = "not checked: run `rmqtool report --verify` (a full scan)"


def facts(info: dict) -> list[tuple[str, str]]:
    """(what, value) rows of the glance, from `info --json` (keys a store lacks are left out)."""
    log, queues, idx, cp = (info.get(k) or {} for k in ("commitlog", "consumeQueues", "index", "checkpoint"))
    rows = [("store", info.get("store")), ("kind", f"{info.get('label', '-')} [{info.get('kind', '-')}]"),
            ("commitlog", f"{log.get('segments', 0)} segment(s) of {log.get('segmentSize', '-')} bytes"),
            ("physical offsets", f"{log.get('firstOffset', '-')} .. {log.get('endOffset', '-')}"),
            ("data", human_bytes(log["dataBytes"]) if "dataBytes" in log else None),
            ("holes", len(log["holes"]) if log.get("holes") else None),
            ("first store time", iso_time(log.get("firstStoreTimestamp"))),
            ("last store time", iso_time(log.get("lastStoreTimestamp"))),
            ("topics", len(queues.get("topics") or [])),
            ("consume queues", f"{queues.get('queueCount', 0)} ({queues.get('form', '-')})"),
            ("messages in queues", _messages(info)),
            ("index", f"{idx.get('files', 0)} file(s), {idx.get('entries', 0)} entries"),
            ("checkpoint", f"physic {iso_time(cp.get('physicMsgTimestamp'))}" if cp.get("present") else "absent"),
            ("abort file", "present" if info.get("abortFile") else "absent"),
            ("lock", f"held by process {info['lockHeldBy']}" if info.get("lockHeldBy") else "free")]
    return [(k, str(v)) for k, v in rows if v is not None]


def _messages(info: dict) -> str | None:
    """"400", or "400 entries, 233 records in the log" when some entries point where the log holds no record."""
    entries, records = info.get("messagesInQueues"), info.get("recordsInLog")
    if entries is None or records is None or records == entries:
        return entries
    return f"{entries} entries, {records} records in the log"


def glance(picture: dict) -> str:
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts(picture.get("info") or {}))
    made = f"written {iso_time(picture.get('generatedMs'))} by rmqtool {picture.get('rmqtoolVersion', '-')}"
    return f'<table class="glance" data-table="glance">{rows}</table><p class="note">{esc(made)}</p>'


def findings(found: dict | None) -> str:
    if found is None:
        return f'<p class="unchecked" data-findings="unchecked">{esc(NOT_CHECKED)}</p>'
    head = (f'<p data-findings="{found["problems"]}" class="{"bad" if found["problems"] else "good"}">'
            f'{esc(found["problems"])} problem(s) found.</p><p class="doctor">{esc(found.get("doctor") or "")}</p>')
    summary = found.get("summary") or []
    return head + (details("findings", ["kind", "structure", "count", "first offset"],
                           [[f["kind"], f["structure"], f["count"], f["firstOffset"]] for f in summary],
                           "the findings") if summary else "")
