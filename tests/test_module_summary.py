"""`bn.model_summary` / `ModelSummary`: counts per top-level module, totals and size."""

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.module_summary import OWN, ModelSummary, ModuleRow
from burnish.record import CompactRecorder
from burnish.record.tree import flatten


class Net(bn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(3))  # on the model itself
        self.embedding = nn.Embedding(50, 8)
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU())
        self.head = nn.Linear(16, 3, dtype=torch.float64)
        self.embedding.weight.requires_grad_(False)  # frozen


def count(params) -> int:
    return sum(p.numel() for p in params)


def test_rows_and_totals_match_the_parameters():
    model = Net()
    summary = bn.model_summary(model)
    assert summary.model == "Net"
    assert [row.name for row in summary.rows] == [OWN, "embedding", "encoder", "head"]
    assert [row.type for row in summary.rows] == ["Net", "Embedding", "Sequential", "Linear"]
    for row in summary.rows[1:]:
        child = getattr(model, row.name)
        assert row.params == count(child.parameters())
        assert row.trainable == count(p for p in child.parameters() if p.requires_grad)
    assert summary.rows[0] == ModuleRow(OWN, "Net", 3, 3)
    assert summary.total == count(model.parameters()) == model.num_params()
    assert summary.trainable == count(p for p in model.parameters() if p.requires_grad)
    assert summary.total - summary.trainable == 50 * 8
    assert summary.size_bytes == sum(p.numel() * p.element_size() for p in model.parameters())
    assert summary.size_mib == pytest.approx(summary.size_bytes / 2**20)


def test_tied_parameters_count_once_in_the_total():
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    model[1].weight = model[0].weight
    summary = bn.model_summary(model)
    assert [row.params for row in summary.rows] == [20, 20]
    assert summary.total == count(model.parameters()) == 16 + 4 + 4


def test_the_table():
    text = str(bn.model_summary(Net()))
    lines = text.splitlines()
    assert lines[0] == "=" * 24 + " Model Summary " + "=" * 24
    assert lines[1] == "Model: Net"
    assert lines[2] == "| Module    | Type       | Params | Trainable |"
    assert "| embedding | Embedding  |    400 |         0 |" in lines
    size = sum(p.numel() * p.element_size() for p in Net().parameters())
    assert f"Total params: {count(Net().parameters()):,} (<0.01 MiB, {size:,} B)" in text
    assert "Trainable params: " in text and "Non-trainable params: 400" in text


def test_from_a_record_groups_by_the_first_name_part(tmp_path):
    model = Net()
    path = CompactRecorder().record(bn.into_record(model), tmp_path / "net")
    record = CompactRecorder().load(path)
    summary = ModelSummary.from_record(record)
    assert summary.model is None and summary.trainable is None
    assert [row.name for row in summary.rows] == [OWN, "embedding", "encoder", "head"]
    # A record is the state_dict: buffers (BatchNorm's running statistics) count too.
    state = model.state_dict()
    assert summary.total == count(state.values())
    encoder = {k: v for k, v in state.items() if k.startswith("encoder.")}
    assert summary.rows[2].params == count(encoder.values())
    assert "Trainable" not in str(summary) and "Type" not in str(summary)
    # TensorLeafs (a record as stored) give the same counts, sized by the dtype they load as.
    stored = CompactRecorder().load_stored(path)[1]
    assert ModelSummary.from_record(flatten(stored)) == summary


def test_a_record_is_not_a_module():
    with pytest.raises(TypeError, match=r"takes a torch.nn.Module\. Received: dict"):
        bn.model_summary({"weight": torch.ones(2)})
