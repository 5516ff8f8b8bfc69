"""`fit` and `Evaluator.eval` inside a real Jupyter kernel: a notebook executed by nbclient on
an ipykernel, its outputs read back. The default renderer there is the notebook one: a live
display updated in place, the plain epoch lines, no escape codes, the summary as a table."""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

import pytest

nbclient = pytest.importorskip("nbclient", reason="the dev extra installs nbclient")
nbformat = pytest.importorskip("nbformat", reason="the dev extra installs nbformat")
pytest.importorskip("ipykernel", reason="the dev extra installs ipykernel")

REPO = Path(__file__).resolve().parents[3]

SETUP = f"""
import os, sys
sys.path[:0] = [{str(REPO / "src")!r}, {str(REPO)!r}]
os.environ["BURNISH_DATASETS"] = {str(REPO / "data")!r}
os.environ.pop("BURNISH_RENDERER", None)
import burnish as bn
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.train import EvaluatorBuilder, LearnerBuilder
from burnish.train.metric import AccuracyMetric, LossMetric
from burnish.train.renderer import default_renderer
from tests.train.helpers import Mlp, loaders
print("renderer:", type(default_renderer()).__name__)
"""

FIT = """
bn.seed(1)
train, valid = loaders(train_items=640, valid_items=256)
learner = (
    LearnerBuilder(ARTIFACT_DIR)
    .metrics(AccuracyMetric(), LossMetric())
    .with_file_checkpointer(DefaultRecorder())
    .num_epochs(2)
    .summary()
    .build(Mlp(), AdamConfig().init(), 1e-3)
)
result = learner.fit(train, valid)
"""

EVALUATE = """
evaluator = EvaluatorBuilder(ARTIFACT_DIR).metrics(AccuracyMetric(), LossMetric()).summary()
evaluator.build(result.model).eval("mnist-test", valid)
"""


class RecordingClient(nbclient.NotebookClient):
    """Counts the kernel's messages of each type per cell: the display's live updates."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.messages: dict[int, Counter[str]] = {}

    def process_message(self, msg, cell, cell_index):
        self.messages.setdefault(cell_index, Counter())[msg["msg_type"]] += 1
        return super().process_message(msg, cell, cell_index)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    directory = tmp_path_factory.mktemp("notebook")
    cells = [
        SETUP + f"ARTIFACT_DIR = {str(directory / 'run')!r}",
        FIT,
        EVALUATE,
    ]
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(textwrap.dedent(source)) for source in cells]
    )
    client = RecordingClient(
        notebook,
        kernel_name="python3",
        timeout=300,
        resources={"metadata": {"path": str(directory)}},
    )
    client.execute()
    return notebook, client.messages


def outputs(notebook, index: int, kind: str) -> list[dict]:
    return [out for out in notebook.cells[index].outputs if out["output_type"] == kind]


def stream_text(notebook, index: int) -> str:
    return "".join(out["text"] for out in outputs(notebook, index, "stream"))


def test_no_escape_code_reaches_the_notebook(executed):
    notebook, _ = executed
    text = nbformat.writes(notebook)
    assert "\\u001b" not in text and "\x1b" not in text  # JSON escapes it as \u001b
    assert "Traceback" not in text


def test_the_default_renderer_in_a_kernel_is_the_notebook_one(executed):
    notebook, _ = executed
    assert "renderer: NotebookMetricsRenderer" in stream_text(notebook, 0)


def test_fit_prints_the_plain_lines_and_keeps_one_live_display(executed):
    notebook, messages = executed
    lines = stream_text(notebook, 1).splitlines()
    assert lines[0].startswith("Artifact directory: ")
    assert "Training for 2 epochs." in lines
    for split in ("train", "valid"):
        for epoch in (1, 2):
            assert any(
                line.startswith(f"[{split}] epoch {epoch}/2 done in") and "| Accuracy " in line
                for line in lines
            ), lines
    progress = [
        out
        for out in outputs(notebook, 1, "display_data")
        if "burnish-progress" in out["data"].get("text/html", "")
    ]
    assert len(progress) == 1  # one display, updated in place
    last = progress[0]["data"]
    assert last["text/plain"].startswith("[valid] epoch 2/2 done")
    assert '<progress style="width: 100%" value="1.0000" max="1">' in last["text/html"]
    assert "<td>Accuracy</td>" in last["text/html"] and "<td>Loss</td>" in last["text/html"]
    # Live: updated at each epoch end of each split at least, not drawn once at the end.
    assert messages[1]["update_display_data"] >= 4, messages[1]


def test_the_summary_is_a_table(executed):
    notebook, _ = executed
    tables = [
        out["data"]["text/html"]
        for out in outputs(notebook, 1, "display_data")
        if "burnish-summary" in out["data"].get("text/html", "")
    ]
    assert len(tables) == 1
    assert "<th>Split</th><th>Metric</th><th>Min.</th>" in tables[0]
    for split in ("Train", "Valid"):
        for metric in ("Accuracy", "Loss"):
            assert f"<td>{split}</td><td>{metric}</td>" in tables[0]
    assert "Learner Summary" not in stream_text(notebook, 1)  # not printed as text as well


def test_the_evaluator_uses_the_same_display(executed):
    notebook, messages = executed
    assert "Evaluating mnist-test." in stream_text(notebook, 2)
    assert "[test mnist-test] done in" in stream_text(notebook, 2)
    displays = [out["data"] for out in outputs(notebook, 2, "display_data")]
    [progress] = [d for d in displays if "burnish-progress" in d.get("text/html", "")]
    assert progress["text/plain"].startswith("[test mnist-test] done")
    [summary] = [d for d in displays if "burnish-summary" in d.get("text/html", "")]
    assert "<td>Test (mnist-test)</td><td>Accuracy</td>" in summary["text/html"]
    assert messages[2]["update_display_data"] >= 1
