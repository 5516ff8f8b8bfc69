"""Import time: `import burnish` and `import burnish.train` over `import torch`.

Each run is a fresh interpreter timing its own import with `time.perf_counter` (interpreter
start-up itself is left out); contenders alternate. The figure that matters is the difference
of medians to `import torch`, target <= 0.3 s.
"""

from __future__ import annotations

import sys
import time

from benchmarks import harness

CONTENDERS = {
    "import torch": "import torch",
    "import burnish": "import torch; import burnish",
    "import burnish.train": "import torch; import burnish; import burnish.train",
}
LIMIT_S = 0.3


def run(settings: harness.Settings, log) -> list[harness.Row]:
    runs = settings.runs
    contenders = {
        name: (
            lambda statement=statement: harness.run_child(
                harness.module_argv("startup", statement), settings.threads
            )
        )
        for name, statement in CONTENDERS.items()
    }
    log(f"startup: {runs} runs")
    results = harness.alternate(contenders, runs, log)
    rows = harness.rows_for("startup", results, "seconds", "import time", "s", "import torch")
    base = rows[0].median
    for row in rows[1:]:
        extra = row.median - base
        row.ok = extra <= LIMIT_S
        row.target = f"+{LIMIT_S:g} s over torch"
        row.note = f"{extra:+.3f} s over import torch"
    return rows


def child(statement: str) -> None:
    start = time.perf_counter()
    exec(statement, {})
    seconds = time.perf_counter() - start
    harness.report({"seconds": seconds})


if __name__ == "__main__":
    child(sys.argv[2])
