"""The CBOR codec: RFC 8949's examples for the subset Burn writes, ciborium's shortest floats,
round trips, and strict refusals of everything Burnpack metadata never holds."""

from __future__ import annotations

import contextlib
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.errors import RecordError
from burnish.record.store import cbor

# RFC 8949 Appendix A (the definite-length, preferred-serialization rows).
RFC = [
    (0, "00"),
    (1, "01"),
    (10, "0a"),
    (23, "17"),
    (24, "1818"),
    (25, "1819"),
    (100, "1864"),
    (1000, "1903e8"),
    (1000000, "1a000f4240"),
    (1000000000000, "1b000000e8d4a51000"),
    (18446744073709551615, "1bffffffffffffffff"),
    (-18446744073709551616, "3bffffffffffffffff"),
    (-1, "20"),
    (-10, "29"),
    (-100, "3863"),
    (-1000, "3903e7"),
    (0.0, "f90000"),
    (-0.0, "f98000"),
    (1.0, "f93c00"),
    (1.1, "fb3ff199999999999a"),
    (1.5, "f93e00"),
    (65504.0, "f97bff"),
    (100000.0, "fa47c35000"),
    (3.4028234663852886e38, "fa7f7fffff"),
    (1.0e300, "fb7e37e43c8800759c"),
    (5.960464477539063e-8, "f90001"),
    (0.00006103515625, "f90400"),
    (-4.0, "f9c400"),
    (-4.1, "fbc010666666666666"),
    (math.inf, "f97c00"),
    (-math.inf, "f9fc00"),
    (False, "f4"),
    (True, "f5"),
    (None, "f6"),
    ("", "60"),
    ("a", "6161"),
    ("IETF", "6449455446"),
    ('"\\', "62225c"),
    ("\u00fc", "62c3bc"),
    ("\u6c34", "63e6b0b4"),
    ("\U00010151", "64f0908591"),
    ([], "80"),
    ([1, 2, 3], "83010203"),
    ([1, [2, 3], [4, 5]], "8301820203820405"),
    (list(range(1, 26)), "98190102030405060708090a0b0c0d0e0f101112131415161718181819"),
    ({}, "a0"),
    ({"a": 1, "b": [2, 3]}, "a26161016162820203"),
    (["a", {"b": "c"}], "826161a161626163"),
    (
        {"a": "A", "b": "B", "c": "C", "d": "D", "e": "E"},
        "a56161614161626142616361436164614461656145",
    ),
]


@pytest.mark.parametrize(("value", "hex_bytes"), RFC, ids=[h for _, h in RFC])
def test_rfc_examples_encode_and_decode(value, hex_bytes):
    assert cbor.encode(value).hex() == hex_bytes
    decoded = cbor.decode(bytes.fromhex(hex_bytes))
    assert decoded == value or (
        isinstance(value, float) and math.copysign(1, decoded) == math.copysign(1, value)
    )


def test_nan_is_written_as_ciborium_does():
    assert cbor.encode(math.nan).hex() == "f97e00"
    assert math.isnan(cbor.decode(bytes.fromhex("f97e00")))


@pytest.mark.parametrize(
    ("hex_bytes", "message"),
    [
        ("5f", "indefinite length"),  # indefinite byte string
        ("9f01ff", "indefinite length"),
        ("bf6161 01ff", "indefinite length"),
        ("c074", "tag"),  # a tagged date
        ("4401020304", "byte string"),
        ("f7", "undefined"),
        ("f0", "simple value"),
        ("f820", "simple value"),
        ("1c", "reserved"),
        ("0001", "unexpected bytes after"),
        ("a10101", "not a text string"),
        ("a2616101616102", "duplicate CBOR map key 'a'"),
        ("62c328", "not valid UTF-8"),
        ("7a7fffffff", "claims 2147483647 bytes"),
        ("9bffffffffffffffff", "claims 18446744073709551615 entries"),
        ("bb0000000100000000", "claims 4294967296 entries"),
        ("19", "needs 2 bytes"),
        ("", "needs 1 bytes"),
    ],
)
def test_everything_outside_the_subset_is_refused_clearly(hex_bytes, message):
    with pytest.raises(RecordError, match=message):
        cbor.decode(bytes.fromhex(hex_bytes.replace(" ", "")))


def test_nesting_is_bounded():
    assert cbor.decode(b"\x81" * cbor.MAX_DEPTH + b"\x00") is not None
    with pytest.raises(RecordError, match="deeper than 128"):
        cbor.decode(b"\x81" * (cbor.MAX_DEPTH + 1) + b"\x00")
    with pytest.raises(RecordError, match="deeper than 128"):
        cbor.decode(b"\x81" * 100_000)  # no RecursionError


def test_encoder_refuses_what_metadata_cannot_hold():
    with pytest.raises(RecordError, match="received a bytes"):
        cbor.encode({"a": b"x"})
    with pytest.raises(RecordError, match="64-bit"):
        cbor.encode(1 << 64)


values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(1 << 64), (1 << 64) - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(values)
def test_round_trip(value):
    assert cbor.decode(cbor.encode(value)) == value


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_arbitrary_bytes_decode_or_raise_record_error(data):
    with contextlib.suppress(RecordError):
        cbor.decode(data)
