"""A small picture (the document `rmqtool report` renders) built to the contract, with exact numbers:
three one-second buckets, the middle one a gap; two topics, one named like a script. And a reader of the
page's elements, for the charts' unit tests and the browser's DOM alike."""

from __future__ import annotations

from html.parser import HTMLParser

EVIL = "<script>alert(1)</script>"
START = 1_700_000_000_000


def sample_picture(*, verified: bool = True) -> dict:
    timeline = {"startMs": START, "endMs": START + 2_500, "bucketMs": 1_000,
                "edgesMs": [START, START + 1_000, START + 2_000, START + 3_000],
                "messages": [30, 0, 10], "bytes": [3_000, 0, 1_500],
                "topics": [{"topic": "OrderTopic", "messages": [20, 0, 10], "bytes": [2_000, 0, 1_500]},
                           {"topic": EVIL, "messages": [10, 0, 0], "bytes": [1_000, 0, 0]}]}
    info = {"store": "/stores/s1", "kind": "4x", "label": "RocketMQ 4.x store (file consume queues)",
            "commitlog": {"segments": 2, "segmentSize": 4096, "holes": [], "firstOffset": 0, "endOffset": 5_000,
                          "firstStoreTimestamp": START, "lastStoreTimestamp": START + 2_500, "dataBytes": 4_500},
            "consumeQueues": {"form": "file", "queueCount": 3, "topics": [
                {"topic": "OrderTopic", "messages": 30, "bytes": 3_500},
                {"topic": EVIL, "messages": 10, "bytes": 1_000}]},
            "index": {"files": 2, "entries": 45}, "checkpoint": {"present": True, "physicMsgTimestamp": START + 2_500},
            "messagesInQueues": 40, "abortFile": False, "lockHeldBy": None, "timeline": timeline,
            "disk": {"allocatedBytes": 12_288, "apparentBytes": 8_196, "files": 3, "parts": [
                {"name": "commitlog", "owner": "structure", "files": 2, "allocatedBytes": 8_192,
                 "apparentBytes": 8_192},
                {"name": "store files", "owner": "store", "files": 1, "allocatedBytes": 4_096, "apparentBytes": 4}],
                "commitlogTopics": {"logDataBytes": 4_500, "attributedBytes": 4_000, "unattributedBytes": 500,
                                    "topics": [{"topic": "OrderTopic", "messages": 30, "bytes": 3_000},
                                               {"topic": EVIL, "messages": 10, "bytes": 1_000}]}}}
    return {
        "generatedMs": START + 10_000, "rmqtoolVersion": "0.test", "info": info, "timeline": timeline,
        "queues": [{"topic": "OrderTopic", "queueId": 0, "minOffset": 0, "maxOffset": 20, "messages": 20,
                    "bytes": 2_500},
                   {"topic": "OrderTopic", "queueId": 1, "minOffset": 5, "maxOffset": 15, "messages": 10,
                    "bytes": 1_000},
                   {"topic": EVIL, "queueId": 0, "minOffset": 0, "maxOffset": 10, "messages": 10, "bytes": 1_000}],
        "segments": [{"name": "00000000000000000000", "start": 0, "size": 4096, "used": 4096, "holes": [],
                      "damaged": [[1024, 1536, "bad-crc"]] if verified else []},
                     {"name": "00000000000000004096", "start": 4096, "size": 4096, "used": 904,
                      "holes": [[4096, 4200]], "damaged": []}],
        "consumers": {"store": "/stores/s1", "flaggedQueues": 0, "groups": [
            {"group": "billing", "topics": ["OrderTopic"], "lag": 12, "queues": [
                {"group": "billing", "topic": "OrderTopic", "queueId": 0, "committedOffset": 12, "minOffset": 0,
                 "maxOffset": 20, "lag": 8, "lagMs": 900, "missed": 0, "state": "ok",
                 "committedStoreMs": START + 500},
                {"group": "billing", "topic": "OrderTopic", "queueId": 1, "committedOffset": 11, "minOffset": 5,
                 "maxOffset": 15, "lag": 4, "lagMs": 400, "missed": 0, "state": "ok",
                 "committedStoreMs": START + 2_100}]}]},
        "index": [{"file": "20231114221320000", "indexCount": 31, "maxIndexNum": 40, "hashSlotNum": 8,
                   "beginTimestamp": START, "endTimestamp": START + 2_000, "chainLengths": {"1": 4, "2": 3}},
                  {"file": "20231114221322000", "indexCount": 14, "maxIndexNum": 40, "hashSlotNum": 8,
                   "beginTimestamp": START + 2_000, "endTimestamp": START + 2_500,
                   "chainLengths": {"1": 2, "4": 1}}],
        "findings": {"problems": 1, "summary": [{"kind": "bad-crc", "structure": "commitlog", "count": 1,
                                                 "firstOffset": 1024}],
                     "doctor": "1 problem: `rmqtool doctor /stores/s1` cuts 512 bytes"} if verified else None,
    }


class Elements(HTMLParser):
    """Every start tag of a document as (tag, attributes), and its text."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def having(self, tag: str, **match: str) -> list[dict]:
        return [a for t, a in self.tags if t == tag and all(a.get(k.replace("_", "-")) == v for k, v in match.items())]
