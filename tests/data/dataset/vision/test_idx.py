import struct

import numpy as np
import pytest

from burnish.data.dataset.vision.idx import parse_idx
from burnish.errors import DatasetError


def idx(type_code, shape, payload):
    header = bytes([0, 0, type_code, len(shape)]) + struct.pack(f">{len(shape)}I", *shape)
    return header + payload


def test_parses_uint8_without_copy():
    data = idx(0x08, (2, 3), bytes(range(6)))
    array = parse_idx(data)
    np.testing.assert_array_equal(array, [[0, 1, 2], [3, 4, 5]])
    assert array.dtype == np.uint8 and not array.flags.writeable


def test_parses_big_endian_types():
    data = idx(0x0C, (3,), struct.pack(">3i", -1, 2, 70000))
    np.testing.assert_array_equal(parse_idx(data), [-1, 2, 70000])
    data = idx(0x0D, (2,), struct.pack(">2f", 1.5, -2.0))
    np.testing.assert_array_equal(parse_idx(data), [1.5, -2.0])


def test_bad_magic():
    with pytest.raises(DatasetError, match=r"labels is not an IDX file: its magic number is 1f8b"):
        parse_idx(b"\x1f\x8b\x08\x00rest", "labels")


def test_size_mismatch():
    with pytest.raises(DatasetError, match=r"has 17 bytes, expected 18 for shape \(2, 3\)"):
        parse_idx(idx(0x08, (2, 3), bytes(5)))
    with pytest.raises(DatasetError, match=r"truncated: its header needs 16 bytes"):
        parse_idx(bytes([0, 0, 8, 3, 0, 0]))
