"""Render `benchmarks/results.json` as the Markdown table used in BENCHMARKS.md.

.venv/bin/python -m benchmarks.markdown [path/to/results.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchmarks import harness


def render(result: dict) -> str:
    """The machine line, the command, and one table row per result row."""
    m = result["machine"]
    lines = [
        f"Machine: `nproc` = {m['nproc']}, {m['cpu']}, Python {m['python']}, torch "
        f"{m['torch']}; load average at start {m['load_average']}. Finished {result['date']}, "
        f"{result['seconds']:.0f} s, {result['settings']['threads']} torch thread(s).",
        "",
        f"Command: `.venv/bin/{result['command']}`",
        "",
        "| benchmark | contender | measure | median | runs | ratio | target | ok | note |",
        "|---|---|---|---:|---:|---:|---|---|---|",
    ]
    for r in result["rows"]:
        value, ratio = harness.shown(r["median"], r["unit"], r["ratio"])
        ok = {True: "yes", False: "**NO**", None: ""}[r["ok"]]
        lines.append(
            f"| {r['benchmark']} | {r['contender']} | {r['measure']} | {value} | "
            f"{len(r['runs'])} | {ratio} | {r['target']} | {ok} | {r['note']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "results.json"
    print(render(json.loads(path.read_text())))
