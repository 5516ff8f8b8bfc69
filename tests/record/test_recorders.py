"""Every recorder round-trips any record, at any precision, with metadata and clear errors."""

from __future__ import annotations

import math

import pytest
import torch

import burnish as bn
from burnish.record import (
    BinFileRecorder,
    BinGzFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    RecordError,
    SafetensorsFileRecorder,
    SensitiveCompactRecorder,
)

FACTORIES = {
    "compact": CompactRecorder,
    "default": DefaultRecorder,
    "mpk-double": lambda: NamedMpkFileRecorder(DoublePrecisionSettings),
    "mpk-gz": lambda: NamedMpkGzFileRecorder(FullPrecisionSettings()),
    "bin": BinFileRecorder,
    "bin-gz-half": lambda: BinGzFileRecorder(HalfPrecisionSettings()),
    "sensitive": SensitiveCompactRecorder,
    "json": PrettyJsonFileRecorder,
    "json-gz": JsonGzFileRecorder,
    "safetensors": SafetensorsFileRecorder,
    "safetensors-half": lambda: SafetensorsFileRecorder(HalfPrecisionSettings),
}
EXTENSIONS = {
    CompactRecorder: "mpk", DefaultRecorder: "mpk", NamedMpkFileRecorder: "mpk",
    NamedMpkGzFileRecorder: "mpk.gz", BinFileRecorder: "bin", BinGzFileRecorder: "bin.gz",
    PrettyJsonFileRecorder: "json", JsonGzFileRecorder: "json.gz",
    SafetensorsFileRecorder: "safetensors",
}  # fmt: skip


def nested_record() -> dict:
    bn.seed(0)
    return {
        "model": {"linear": {"weight": torch.randn(3, 4), "bias": torch.randn(3)}},
        "optim": {
            "state": [{"step": 7, "exp_avg": torch.randn(3, 4, dtype=torch.float64)}],
            "betas": (0.9, 0.999),
        },
        "ints": torch.tensor([-5, 0, 2**40]),  # does not fit int16/int32: never wrapped
        "small_ints": torch.arange(6, dtype=torch.int64).reshape(2, 3),
        "mask": torch.tensor([True, False, True]),
        "bytes": torch.tensor([0, 255], dtype=torch.uint8),
        "bf16": torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
        "scalar": torch.tensor(3.25),
        "empty": torch.zeros(0, 5),
        "epoch": 3,
        "lr": 1e-3,
        "nan": math.nan,
        "inf": -math.inf,
        "big": 2**62,
        "name": "résumé",
        "flag": False,
        "nothing": None,
        "nested_list": [[1, [2, "x"]], {}],
    }


def assert_same(actual, expected, tol: float) -> None:
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor)
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        torch.testing.assert_close(actual, expected, atol=tol, rtol=tol, equal_nan=True)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected)
        for key in expected:
            assert_same(actual[key], expected[key], tol)
    elif isinstance(expected, (list, tuple)):
        assert isinstance(actual, list) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e, tol)
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(actual)
    else:
        assert type(actual) is type(expected) and actual == expected


@pytest.mark.parametrize("name", FACTORIES)
def test_any_record_round_trips_with_recorded_dtypes(tmp_path, name):
    recorder = FACTORIES[name]()
    record = nested_record()
    path = recorder.record(record, tmp_path / "state")
    assert path == tmp_path / f"state.{recorder.file_extension}"
    tol = {torch.float16: 2e-3, torch.float32: 1e-6, torch.float64: 0.0}
    tol = tol[recorder.settings.float_dtype]
    assert_same(recorder.load(path), record, tol)
    # the extension is optional when loading, and an existing one is not doubled
    assert_same(recorder.load(tmp_path / "state"), record, tol)
    assert recorder.record(record, path) == path


@pytest.mark.parametrize("cls", list(EXTENSIONS))
def test_file_extensions_match_burn(cls):
    assert cls().file_extension == EXTENSIONS[cls]


def test_default_recorders_use_burns_settings():
    assert CompactRecorder().settings == HalfPrecisionSettings()
    assert DefaultRecorder().settings == FullPrecisionSettings()
    assert SensitiveCompactRecorder().settings == HalfPrecisionSettings()
    assert (HalfPrecisionSettings().float_dtype, HalfPrecisionSettings().int_dtype) == (
        torch.float16,
        torch.int16,
    )
    assert DoublePrecisionSettings().float_dtype == torch.float64


@pytest.mark.parametrize("name", FACTORIES)
def test_every_file_carries_metadata(tmp_path, name):
    recorder = FACTORIES[name]()
    path = recorder.record({"w": torch.ones(2)}, tmp_path / "m", record_type="test:thing")
    meta = recorder.load_metadata(path)
    assert meta.format.startswith("burnish.")
    assert meta.version == bn.__version__
    assert meta.record_type == "test:thing"
    assert meta.float == str(recorder.settings.float_dtype).removeprefix("torch.")
    assert meta.settings == type(recorder.settings).__name__


def test_half_precision_halves_the_file(tmp_path):
    record = {"w": torch.randn(256, 256)}
    full = DefaultRecorder().record(record, tmp_path / "full").stat().st_size
    half = CompactRecorder().record(record, tmp_path / "half").stat().st_size
    assert half < 0.55 * full
    data = CompactRecorder().to_bytes(record)
    assert data.count(record["w"].half().numpy().tobytes()) == 1  # raw little-endian bytes


def test_ints_are_narrowed_only_when_they_fit():
    recorder = CompactRecorder()
    small = recorder.to_bytes({"t": torch.arange(1000, dtype=torch.int64)})
    wide = recorder.to_bytes({"t": torch.arange(1000, dtype=torch.int64) * 100})
    assert len(small) < len(wide) / 3  # int16 vs kept int64
    out = recorder.from_bytes(wide)["t"]
    assert out.dtype == torch.int64 and int(out[-1]) == 99900


def test_files_are_deterministic(tmp_path):
    # (safetensors orders its header metadata by hash, so only its tensors are stable)
    for recorder in (CompactRecorder(), BinGzFileRecorder(), JsonGzFileRecorder()):
        first = recorder.to_bytes(nested_record())
        assert recorder.to_bytes(nested_record()) == first


def test_load_moves_tensors_to_device():
    out = DefaultRecorder().from_bytes(DefaultRecorder().to_bytes({"w": torch.ones(2)}), "meta")
    assert out["w"].device.type == "meta"


@pytest.mark.parametrize(
    ("writer", "reader", "match"),
    [
        (BinFileRecorder, DefaultRecorder, "Expected MessagePack data.*found burnish binary"),
        (NamedMpkGzFileRecorder, DefaultRecorder, "found gzip data.*gzip recorder"),
        (DefaultRecorder, NamedMpkGzFileRecorder, "Expected gzip data.*found MessagePack"),
        (PrettyJsonFileRecorder, BinFileRecorder, "found JSON data.*PrettyJsonFileRecorder"),
        (SafetensorsFileRecorder, DefaultRecorder, "found safetensors data"),
        (BinGzFileRecorder, NamedMpkGzFileRecorder, "inside the gzip stream.*burnish binary"),
        (JsonGzFileRecorder, PrettyJsonFileRecorder, "found gzip"),
    ],
)
def test_wrong_kind_of_file_names_actual_and_expected(tmp_path, writer, reader, match):
    path = writer().record({"w": torch.ones(2)}, tmp_path / "x")
    with pytest.raises(RecordError, match=match):
        reader().load(path)


HALF, FULL, DOUBLE = HalfPrecisionSettings, FullPrecisionSettings, DoublePrecisionSettings


@pytest.mark.parametrize(
    ("writer", "reader", "through"),
    [
        (CompactRecorder, DefaultRecorder, torch.float16),  # the file's half values, in float32
        (DefaultRecorder, CompactRecorder, torch.float16),  # rounded to the reader's half
        (lambda: NamedMpkFileRecorder(DOUBLE), DefaultRecorder, torch.float32),
        (lambda: BinGzFileRecorder(FULL), SensitiveCompactRecorder, torch.float16),
        (lambda: SafetensorsFileRecorder(HALF), SafetensorsFileRecorder, torch.float16),
    ],
    ids=["half-by-full", "full-by-half", "double-by-full", "bin-gz-full-by-half", "st-half"],
)
def test_another_precision_loads_through_the_readers_precision_as_in_burn(
    tmp_path, writer, reader, through
):
    """Burn converts each tensor to the loading recorder's element type: no error, and the
    values are those the reader would have stored (floats that would overflow are kept)."""
    weights = torch.linspace(-1, 1, 7, dtype=torch.float64) / 3
    record = {"w": weights, "big": torch.tensor([1e6, 7e4]), "n": torch.arange(3), "epoch": 2}
    loaded = reader().load(writer().record(record, tmp_path / "x"), device="cpu")
    assert loaded["w"].dtype == torch.float64
    assert torch.equal(loaded["w"], weights.to(through).to(torch.float64))
    assert not torch.equal(loaded["w"], weights)
    assert torch.equal(loaded["big"], record["big"])  # 7e4 overflows float16: kept whole
    assert torch.equal(loaded["n"], record["n"]) and loaded["epoch"] == 2


def test_foreign_msgpack_and_json_are_not_records(tmp_path):
    import json

    import msgpack

    (tmp_path / "a.mpk").write_bytes(msgpack.packb({"weights": [1, 2]}))
    with pytest.raises(RecordError, match=r"not a burnish record.*\['weights'\]"):
        DefaultRecorder().load(tmp_path / "a.mpk")
    (tmp_path / "c.json").write_text(json.dumps({"metadata": {"format": "burnish.mpk"}}))
    with pytest.raises(RecordError, match="not a burnish record"):
        PrettyJsonFileRecorder().load(tmp_path / "c.json")


def test_format_mismatch_in_metadata_is_named():
    data = PrettyJsonFileRecorder().to_bytes({"w": 1}).replace(b"burnish.json", b"burnish.mpk")
    with pytest.raises(RecordError, match=r"holds a 'burnish\.mpk' record; PrettyJsonFileRecorder"):
        PrettyJsonFileRecorder().from_bytes(data)


def test_newer_format_version_asks_for_upgrade():
    data = PrettyJsonFileRecorder().to_bytes({"w": 1})
    data = data.replace(b'"format_version": 1', b'"format_version": 99')
    with pytest.raises(RecordError, match=r"format version 99.*Upgrade burnish"):
        PrettyJsonFileRecorder().from_bytes(data)


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(RecordError, match=r"No record file at .*nope\.mpk"):
        CompactRecorder().load(tmp_path / "nope")


@pytest.mark.parametrize(
    ("record", "match"),
    [
        ({"a": {1: torch.ones(1)}}, r"`a` has the key 1 of type int; record keys must be str"),
        ({"a": [object()]}, r"`a\[0\]` has type object"),
        ({"a": {"b": 2**70}}, r"`a.b` is the integer .* outside the 64-bit range"),
        ({"c": torch.ones(2, dtype=torch.complex64)}, "cannot hold tensors of dtype"),
        ({"s": torch.ones(2).to_sparse()}, "dense tensors"),
    ],
)
def test_unsupported_values_are_refused_with_their_path(record, match):
    with pytest.raises(RecordError, match=match):
        DefaultRecorder().to_bytes(record)


def test_json_reserved_keys_are_refused():
    with pytest.raises(
        RecordError, match=r"`x` uses the key '\$tensor', which JSON records reserve"
    ):
        PrettyJsonFileRecorder().to_bytes({"x": {"$tensor": 1}})


def test_deep_records_are_refused_on_save():
    record: dict = {}
    node = record
    for _ in range(150):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(RecordError, match="nested deeper than 100"):
        DefaultRecorder().to_bytes(record)


def test_numpy_values_are_accepted():
    import numpy as np

    out = DefaultRecorder().from_bytes(
        DefaultRecorder().to_bytes({"a": np.arange(3), "f": np.float32(0.5), "i": np.int64(2)})
    )
    assert torch.equal(out["a"], torch.arange(3)) and out["f"] == 0.5 and out["i"] == 2


def test_settings_accept_classes_and_reject_others():
    assert NamedMpkFileRecorder(HalfPrecisionSettings).settings == HalfPrecisionSettings()
    with pytest.raises(TypeError, match="must be a PrecisionSettings"):
        NamedMpkFileRecorder("half")
