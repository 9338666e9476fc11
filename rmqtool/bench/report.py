"""`bench report`: `rmqtool report STORE` against `rmqtool info STORE --json`, each a fresh process, on
one store: the best wall time of each, their ratio (the target: a report in at most 1.5x the time of
`info`), each one's peak RSS and the page's size."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from rmqtool.bench.readpath import _data_bytes, bench_store
from rmqtool.bench.scale import run_process
from rmqtool.errors import RmqError


def run_report_bench(store: Path | None, *, messages: int, body_size: int, repeat: int = 2,
                     config: Path | None = None, progress=None) -> dict:
    """Best of `repeat` runs of each command (after an untimed one of each: imports, compiled kernels, page
    cache) on STORE or a generated store of `messages`."""
    tmp = Path(tempfile.mkdtemp(prefix="rmqtool-bench-report-"))
    page = tmp / "report.html"
    try:
        with bench_store(store, config, messages, body_size, progress) as reader:
            root, extra = str(reader.paths.root), (["--config", str(config)] if config else [])
            store_bytes = _data_bytes(reader)
            commands = {"info": ["info", root, "--json", *extra], "report": ["report", root, "--out", str(page),
                                                                             *extra]}
            first = {name: run_process(args, keep_stdout=name == "info") for name, args in commands.items()}
            for name, done in first.items():
                if done["exitCode"] != 0:
                    raise RmqError(f"bench report: `rmqtool {' '.join(commands[name])}` exited {done['exitCode']}")
            counted = json.loads(first["info"]["stdout"]).get("messagesInQueues", 0)
            best: dict[str, dict] = {}
            for _ in range(repeat):
                for name, args in commands.items():
                    done = run_process(args)
                    if name not in best or done["seconds"] < best[name]["seconds"]:
                        best[name] = {"seconds": done["seconds"], "peakRssBytes": done["peakRssBytes"]}
            html = page.stat().st_size
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    info, report = best["info"]["seconds"], best["report"]["seconds"]
    return {"mode": "report", "messages": counted, "storeBytes": store_bytes, "info": best["info"],
            "report": best["report"], "reportToInfo": round(report / info, 3) if info else None, "htmlBytes": html}
