"""Queries that span more than one queue: a time across every queue of a topic (mqadmin's resetOffsetByTime
view), and a key across every topic of the store (an operator with a business key but no topic).

The index is keyed by hashes of `topic#key`, so a key without its topic is looked up once per topic the store
names: the topics of its consume-queue folder and of `config/topics.json`. When the index cannot answer (no index
files, a file it had to skip, or a topic's lookup cut at --max raw hits, where other keys' hash collisions may have
crowded out real ones) the commitlog is scanned instead, and the search says why.
"""

from __future__ import annotations

from dataclasses import dataclass

from rmqtool.errors import NotFound, RmqError
from rmqtool.ops.query import Hit, StoreQuery, outside_window
from rmqtool.structures.config.topics import read_table, topics_path
from rmqtool.structures.layout import JAVA_LONG_MAX


def topic_queues_by_time(q: StoreQuery, topic: str, timestamp: int) -> list[dict]:
    """For each queue of `topic`, in queue id order, `StoreQuery.offset_by_time`'s answer; a queue whose entries
    point where the log holds no record gets a row with its bounds and the `problem` instead. NotFound when the
    store holds no queue of the topic."""
    ids = q.reader.queue_ids(topic)
    if not ids:
        raise NotFound(_no_such_topic(q, topic))
    rows = []
    for queue_id in ids:
        try:
            rows.append(q.offset_by_time(topic, queue_id, timestamp))
        except NotFound as e:
            low, high = q.reader.queues.bounds(topic, queue_id)
            rows.append({"topic": topic, "queueId": queue_id, "timestamp": timestamp, "minOffset": low,
                         "maxOffset": high, "problem": str(e)})
    return rows


def _no_such_topic(q: StoreQuery, topic: str) -> str:
    known = sorted(q.reader.topics())
    shown = ", ".join(known[:8]) + (f" and {len(known) - 8} more" if len(known) > 8 else "")
    return f"the store holds no queue of topic {topic} (its topics: {shown or 'none'})"


@dataclass
class KeySearch:
    """A key searched in every topic: the hits (commitlog order), the topics the index was asked under, why the
    commitlog was scanned instead of the index (None: the index answered, or --scan asked for the scan), and
    what the search could not read (a broken topics.json)."""

    hits: list[Hit]
    topics: list[str]
    scanned_because: str | None
    warnings: list[str]


def store_topics(q: StoreQuery) -> tuple[list[str], list[str]]:
    """(topics, warnings): the topics of the consume-queue folder and of config/topics.json, sorted; a
    topics.json that cannot be read is a warning, the consume queues' topics still searched."""
    names, warnings = set(q.reader.topics()), []
    path = topics_path(q.reader.paths.root)
    try:
        table = read_table(path).get("topicConfigTable", {})
    except RmqError:
        table = {}
        warnings.append(f"{path} is not a topic table: only the consume queues' topics are searched")
    names.update(t for t in table if isinstance(t, str))
    return sorted(names), warnings


def key_in_every_topic(q: StoreQuery, key: str, *, unique: bool = False, begin: int = 0, end: int = JAVA_LONG_MAX,
                       max_hits: int = 64, scan: bool = False) -> KeySearch:
    """Messages of any topic carrying `key` (a KEYS word or the UNIQ_KEY; `unique`: the UNIQ_KEY only): the
    index under each topic first, confirmed record by record; the commitlog scanned when the index cannot
    answer. `--max` bounds each topic's index lookup, and the scan's hits."""
    topics, warnings = store_topics(q)
    if scan:
        return KeySearch(q.scan_key(None, key, unique=unique, begin=begin, end=end, max_hits=max_hits), topics,
                         None, warnings)
    why = q.index_missing() or (None if topics else "the store names no topic (no consume queue, no topics.json)")
    if why is None:
        found: dict[int, Hit] = {}
        for topic in topics:
            for hit in q.by_key(topic, key, unique=unique, begin=begin, end=end, max_hits=max_hits):
                found[hit.message.physical_offset] = hit
        why = _index_fell_short(q, max_hits)
        if why is None:
            return KeySearch([found[o] for o in sorted(found)], topics, None, warnings)
        q.limited = False
        q.matched.clear()
    return KeySearch(q.scan_key(None, key, unique=unique, begin=begin, end=end, max_hits=max_hits), topics, why,
                     warnings)


def _index_fell_short(q: StoreQuery, max_hits: int) -> str | None:
    """Why the index lookups just made may have missed hits (None when they cannot have)."""
    if q.skipped:
        return f"the index lookup skipped {len(q.skipped)} index file(s) it cannot read"
    if q.limited:
        return (f"a topic's index lookup stopped at --max {max_hits} raw hits, which other keys' hash collisions "
                "may fill")
    return None


def why_none_anywhere(q: StoreQuery, search: KeySearch, key: str, *, unique: bool = False, begin: int = 0,
                      end: int = JAVA_LONG_MAX, max_hits: int = 64, scan: bool = False) -> str:
    """Why a search of every topic found nothing: the --begin/--end window when the key is carried outside it
    (the same search again without it), or the key."""
    what = f"{'unique key' if unique else 'key'} {key!r}"
    if begin > 0 or end < JAVA_LONG_MAX:
        limited, q.limited = q.limited, False
        outside = key_in_every_topic(q, key, unique=unique, max_hits=max_hits, scan=scan).hits
        more, q.limited = q.limited, limited
        if outside:
            return outside_window(outside, more, "of the store", what, begin, end)
    if scan or search.scanned_because is not None:
        return f"no message of the commitlog carries {what}"
    shown = ", ".join(search.topics[:8]) + (f" and {len(search.topics) - 8} more" if len(search.topics) > 8 else "")
    return f"no message of any topic carries {what} (the index searched under {shown})"
