"""The Burnpack container, after burn-pack's own tests (header, alignment, errors, round trip),
and byte for byte against a file Burn wrote (the header and metadata of Burn's MNIST example
model, `examples/mnist-inference-web/model.bpk`, kept in `data/`)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import torch

from burnish.errors import RecordError
from burnish.record.store import burnpack, cbor
from burnish.record.store.burnpack import PackReader, PackTensor

BURN_FILE = Path(__file__).with_name("data") / "burn_mnist_model.bpk"


def pack(tensors, metadata=None, scalars=None) -> bytearray:
    return bytearray(b"".join(bytes(c) for c in burnpack.encode_chunks(tensors, metadata, scalars)))


def f32(name, values, shape, param_id=None) -> PackTensor:
    return PackTensor.of(name, torch.tensor(values, dtype=torch.float32).reshape(shape), param_id)


def header(version=burnpack.FORMAT_VERSION, metadata_size=0, magic=burnpack.MAGIC_NUMBER):
    return bytearray(struct.pack("<IHI", magic, version, metadata_size))


# -- header (burn-pack tests/header.rs) --------------------------------------------------------


def test_header_constants():
    assert burnpack.HEADER_SIZE == 10
    assert burnpack.MAGIC_NUMBER == 0x4255524E
    assert burnpack.MAGIC == b"NRUB"
    assert burnpack.TENSOR_ALIGNMENT == 256


def test_header_layout():
    data = pack([])
    magic, version, size = struct.unpack_from("<IHI", data)
    assert (magic, version) == (0x4255524E, 1)
    assert cbor.decode(data[10 : 10 + size]) == {"tensors": {}}


def test_rejects_bad_magic():
    with pytest.raises(RecordError, match=r"Not a Burnpack file.*magic 0x4255524E"):
        PackReader.from_buffer(header(magic=0xDEADBEEF))


def test_rejects_short_input():
    with pytest.raises(RecordError, match="holds 4 bytes; the header alone needs 10"):
        PackReader.from_buffer(bytearray(4))


# -- errors (burn-pack tests/errors.rs) --------------------------------------------------------


def test_rejects_future_version():
    with pytest.raises(RecordError, match=r"version 2 is newer.*Upgrade burnish"):
        PackReader.from_buffer(header(version=2))


def test_rejects_oversized_metadata_claim_before_reading_it():
    with pytest.raises(RecordError, match=r"claims 104857601 bytes of metadata; at most"):
        PackReader.from_buffer(header(metadata_size=burnpack.MAX_METADATA_SIZE + 1))


def test_rejects_metadata_size_past_eof():
    with pytest.raises(RecordError, match="claims 4096 bytes of metadata, but the file holds 0"):
        PackReader.from_buffer(header(metadata_size=4096))


def test_rejects_duplicate_tensor_names():
    with pytest.raises(RecordError, match="Two tensors are named 'w'"):
        pack([f32("w", [1, 2], [2]), f32("w", [3, 4], [2])])


def test_rejects_truncated_data_section():
    data = pack([f32("w", list(range(512)), [512])])
    with pytest.raises(RecordError, match=r"'w' ends at byte .* past the end of the file"):
        PackReader.from_buffer(data[: len(data) // 2])


def test_rejects_a_tensor_whose_bytes_disagree_with_its_shape():
    document = {"tensors": {"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}}
    blob = cbor.encode(document)
    data = header(metadata_size=len(blob)) + blob + bytes(300)
    with pytest.raises(RecordError, match=r"'w' spans 8 bytes, but shape \[3\] of F32 needs 12"):
        PackReader.from_buffer(data)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"dtype": "F128", "shape": [1], "data_offsets": [0, 4]}, "dtype 'F128'"),
        ({"dtype": {"QFloat": {}}, "shape": [1], "data_offsets": [0, 4]}, "quantized"),
        ({"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}, "not a list of"),
        ({"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}, "ends .* before it starts"),
        ({"dtype": "F32", "shape": [1], "data_offsets": [0]}, "not \\[start, end\\]"),
        ({"dtype": "F32", "shape": [1 << 40], "data_offsets": [0, 1 << 42]}, "over the"),
        ({"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "param_id": -1}, "not a u64"),
        ("x", "is not a map"),
    ],
)
def test_rejects_bad_descriptors_with_the_tensor_named(entry, message):
    blob = cbor.encode({"tensors": {"w": entry}})
    with pytest.raises(RecordError, match=message):
        PackReader.from_buffer(header(metadata_size=len(blob)) + blob + bytes(600))


def test_rejects_metadata_that_is_not_the_schema():
    for document, message in [
        ([], "must be a map with a `tensors` map"),
        ({"tensors": {}, "metadata": {"a": 1}}, "map strings to strings"),
        ({"tensors": {}, "scalars": {"s": {"Str": "x"}}}, "scalar 's'"),
    ]:
        blob = cbor.encode(document)
        with pytest.raises(RecordError, match=message):
            PackReader.from_buffer(header(metadata_size=len(blob)) + blob)


# -- alignment (burn-pack tests/alignment.rs, src/reader.rs) ------------------------------------


@pytest.mark.parametrize("metadata_size", [0, 1, 10, 245, 246, 247, 4096])
def test_data_section_start_is_aligned(metadata_size):
    start = burnpack.aligned_data_section_start(metadata_size)
    assert start % 256 == 0
    assert 10 + metadata_size <= start < 10 + metadata_size + 256


def test_tensor_offsets_are_256_aligned_and_padding_is_zero():
    data = pack([f32("a", [1, 2, 3], [3]), f32("b", [4], [1]), f32("c", [5, 6], [2])])
    reader = PackReader.from_buffer(data)
    spans = sorted((d.start, d.end) for d in reader.descriptors.values())
    assert spans == [(0, 12), (256, 260), (512, 520)]
    assert reader.data_start % 256 == 0 and len(data) == reader.data_start + 520
    assert not any(data[reader.data_start + 12 : reader.data_start + 256])


# -- round trip (burn-pack tests/round_trip.rs) --------------------------------------------------


def test_single_tensor_round_trip():
    reader = PackReader.from_buffer(pack([f32("weight", [1, 2, 3, 4], [2, 2], param_id=7)]))
    (name,) = reader.names()
    descriptor = reader.descriptors[name]
    assert (name, descriptor.dtype, descriptor.shape, descriptor.param_id) == (
        "weight",
        "F32",
        (2, 2),
        7,
    )
    assert descriptor.end - descriptor.start == 16
    assert reader.tensor("weight").tolist() == [[1, 2], [3, 4]]


def test_tensors_are_sorted_by_name_and_keep_their_data():
    tensors = [
        f32("zebra", [1.0] * 5, [5]),
        f32("alpha", [2.0] * 300, [300]),
        f32("mango", [3.0], [1]),
    ]
    reader = PackReader.from_buffer(pack(tensors))
    assert reader.names() == ["alpha", "mango", "zebra"]
    for tensor in tensors:
        assert torch.equal(reader.tensor(tensor.name), tensor.data_fn())


def test_user_metadata_param_ids_and_scalars_round_trip():
    reader = PackReader.from_buffer(
        pack(
            [f32("with", [1], [1], param_id=123), f32("without", [2], [1])],
            {"producer": "burn-pack", "format": "burnpack"},
            {"step": 42, "lr": 0.001, "flag": True, "offset": -3},
        )
    )
    assert reader.metadata == {"format": "burnpack", "producer": "burn-pack"}
    assert reader.descriptors["with"].param_id == 123
    assert reader.descriptors["without"].param_id is None
    assert reader.scalars == {"flag": True, "lr": 0.001, "offset": -3, "step": 42}


def test_empty_pack_and_no_scalars():
    reader = PackReader.from_buffer(pack([]))
    assert reader.names() == [] and reader.scalars == {} and reader.metadata == {}


DTYPES = [
    torch.float64,
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint64,
    torch.uint32,
    torch.uint16,
    torch.uint8,
    torch.bool,
]


def test_every_dtype_round_trips_with_its_byte_length():
    tensors = [
        PackTensor.of(
            f"t{i}",
            (torch.arange(7) % 2).to(dtype).reshape(7)
            if dtype != torch.bool
            else torch.tensor([True, False] * 3 + [True]),
        )
        for i, dtype in enumerate(DTYPES)
    ]
    reader = PackReader.from_buffer(pack(tensors))
    for tensor in tensors:
        descriptor = reader.descriptors[tensor.name]
        assert descriptor.end - descriptor.start == 7 * (
            1 if tensor.dtype == torch.bool else tensor.dtype.itemsize
        )
        loaded = reader.tensor(tensor.name)
        assert loaded.dtype == tensor.dtype and torch.equal(loaded, tensor.data_fn())
    assert reader.descriptors["t12"].dtype == "Bool"


def test_bool_u8_and_u32_stores_read():
    blob = cbor.encode(
        {
            "tensors": {
                "a": {"dtype": {"Bool": "U32"}, "shape": [2], "data_offsets": [0, 8]},
                "b": {"dtype": {"Bool": "U8"}, "shape": [2], "data_offsets": [256, 258]},
            }
        }
    )
    data = header(metadata_size=len(blob)) + blob
    data += bytes(burnpack.aligned_data_section_start(len(blob)) - len(data))
    data += struct.pack("<II", 0, 7) + bytes(248) + b"\x01\x00"
    reader = PackReader.from_buffer(data)
    assert reader.tensor("a").tolist() == [False, True]
    assert reader.tensor("b").tolist() == [True, False]


def test_file_round_trip_maps_the_file(tmp_path):
    path = tmp_path / "x.bpk"
    path.write_bytes(pack([f32("w", [1, 2, 3, 4], [2, 2], param_id=1)], {"producer": "p"}))
    reader = PackReader.from_file(path)
    assert reader.metadata == {"producer": "p"}
    tensor = reader.tensor("w")
    assert tensor.tolist() == [[1, 2], [3, 4]]
    tensor.add_(1)  # a private mapping: the file keeps its bytes
    assert PackReader.from_file(path).tensor("w").tolist() == [[1, 2], [3, 4]]


# -- byte for byte with Burn ---------------------------------------------------------------------


def test_burn_metadata_reencodes_to_the_same_bytes():
    data = BURN_FILE.read_bytes()
    (size,) = struct.unpack_from("<I", data, 6)
    blob = data[10 : 10 + size]
    assert cbor.encode(cbor.decode(blob)) == blob


def test_writer_produces_burns_file_byte_for_byte_from_its_tensors():
    whole = BURN_FILE.read_bytes()
    (size,) = struct.unpack_from("<I", whole, 6)
    document = cbor.decode(whole[10 : 10 + size])
    entries = sorted(document["tensors"].items(), key=lambda item: item[1]["data_offsets"][0])
    reader = PackReader.from_file(BURN_FILE)
    tensors = [
        PackTensor.of(name, reader.tensor(name), entry["param_id"]) for name, entry in entries
    ]
    chunks = list(burnpack.encode_chunks(tensors))
    start = burnpack.aligned_data_section_start(size)
    assert b"".join(bytes(c) for c in chunks[:3]) == whole[:start]  # header, metadata, padding
    assert b"".join(bytes(c) for c in chunks) == whole
