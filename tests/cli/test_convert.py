"""`burnish convert IN OUT --to FORMAT [--precision P]`, and its progress bar on a terminal."""

import pytest
import torch

from burnish.cli.convert import LARGE_RECORD_BYTES
from burnish.record import (
    CompactRecorder,
    DefaultRecorder,
    SafetensorsFileRecorder,
    recorder_for_file,
)

from tests.cli.helpers import assert_one_line_error, burnish, in_terminal
from tests.helpers import assert_close

CASES = [  # --to, --precision, the file written, its precision settings
    ("safetensors", None, "out.safetensors", "HalfPrecisionSettings"),  # the input's precision
    ("safetensors", "full", "out.safetensors", "FullPrecisionSettings"),
    ("compact", None, "out.mpk", "HalfPrecisionSettings"),
    ("default", None, "out.mpk", "FullPrecisionSettings"),
    ("bin", "double", "out.bin", "DoublePrecisionSettings"),
    ("json", None, "out.json", "HalfPrecisionSettings"),
]


@pytest.mark.parametrize(("to", "precision", "written", "settings"), CASES)
def test_convert_keeps_the_values_and_says_what_it_wrote(
    run_dir, tmp_path, to, precision, written, settings
):
    source = run_dir / "model.mpk"
    args = ["convert", source, tmp_path / "out", "--to", to]
    result = burnish(*args, *(["--precision", precision] if precision else []))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    target = tmp_path / written
    recorder = recorder_for_file(target)
    assert len(result.stdout.splitlines()) == 1
    assert result.stdout.startswith(
        f"Converted {source} (burnish.mpk, HalfPrecisionSettings) to {target} "
        f"({recorder.format}, {settings}, "
    )
    metadata = recorder.load_metadata(target)
    assert metadata.settings == settings
    assert metadata.record_type == CompactRecorder().load_metadata(source).record_type
    # Half-precision values are exact in every precision: nothing is lost on the way.
    expected = CompactRecorder().load(source)
    assert_close(recorder.load(target), expected, 0, 0)
    if to == "safetensors":  # and the ecosystem reads the file as the state_dict
        from safetensors.torch import load_file

        tensors = load_file(target)
        dtype = torch.float16 if settings == "HalfPrecisionSettings" else torch.float32
        assert {tensor.dtype for tensor in tensors.values()} == {dtype}
        assert_close({name: t.float() for name, t in tensors.items()}, expected, 0, 0)


def test_a_precision_that_contradicts_the_format_is_refused(run_dir, tmp_path):
    result = burnish("convert", run_dir / "model.mpk", tmp_path / "x", "--to", "compact",
                     "--precision", "full")  # fmt: skip
    assert_one_line_error(result, "--to compact is always half precision", "--to default")
    assert not list(tmp_path.iterdir())


def test_large_records_show_a_progress_bar_on_a_terminal_only(tmp_path):
    record = {"weight": torch.arange(LARGE_RECORD_BYTES // 4 + 1024, dtype=torch.float32)}
    source = DefaultRecorder().record(record, tmp_path / "big")
    assert source.stat().st_size > LARGE_RECORD_BYTES

    piped = burnish("convert", source, tmp_path / "piped", "--to", "safetensors")
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == "" and len(piped.stdout.splitlines()) == 1
    assert "Reading" not in piped.stdout

    status, screen, stderr = in_terminal("convert", source, tmp_path / "tty", "--to", "safetensors")
    assert status == 0, stderr
    assert "Reading big.mpk" in screen and "Writing tty.safetensors" in screen
    assert "MiB" in screen and "━" in screen  # rich's bar and byte counts
    assert f"to {tmp_path / 'tty.safetensors'}" in screen
    for name in ("piped", "tty"):
        converted = SafetensorsFileRecorder().load(tmp_path / f"{name}.safetensors")
        assert_close(converted, record, 0, 0)
