"""The configs' differences (`burnish report DIR DIR ...`): flattened paths, compared as JSON.

Property tests over any JSON a config.json can hold: nested dicts and lists, every type, odd
keys (dots, brackets, quotes, empty), NaN and inf, huge numbers, deep nesting.
"""

import copy
import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.cli.config_diff import ROOT, diff_configs, flatten_config

KEYS = st.one_of(
    st.sampled_from(["lr", "model", "a.b", "[0]", "0", "", " ", '"', "a b", "betas", "x]"]),
    st.text(max_size=8),
)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([0, 1, 1.0, True, 0.0, -0.0, 1e308, -1e308, 5e-324, 10**40]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=10),
)
JSON = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=4)
    ),
    max_leaves=25,
)


def leaves(value) -> int:
    """The number of values `flatten_config` should give (an empty dict or list is one)."""
    if isinstance(value, dict) and value:
        return sum(leaves(child) for child in value.values())
    if isinstance(value, list) and value:
        return sum(leaves(child) for child in value)
    return 1


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_flattening_gives_one_distinct_path_per_value(config):
    flat = flatten_config(config)
    assert len(flat) == leaves(config)  # no two values on the same path
    assert all(isinstance(text, str) for text in flat.values())
    if not isinstance(config, (dict, list)) or not config:
        assert list(flat) == [ROOT]


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_a_config_written_and_read_back_has_no_difference_with_itself(config):
    """NaN equals NaN here; a JSON round trip changes nothing that shows as a difference."""
    again = json.loads(json.dumps(config))
    diff = diff_configs([config, again, copy.deepcopy(config)])
    assert diff.differing == {}
    assert diff.same == flatten_config(config)


@settings(max_examples=200, deadline=None)
@given(st.lists(JSON, min_size=1, max_size=4))
def test_every_path_is_either_the_same_in_all_or_listed_as_differing(configs):
    diff = diff_configs(configs)
    flats = [flatten_config(config) for config in configs]
    assert set(diff.differing) | set(diff.same) == {p for flat in flats for p in flat}
    assert not set(diff.differing) & set(diff.same)
    for path, value in diff.same.items():
        assert all(flat.get(path) == value for flat in flats)
    for path, values in diff.differing.items():
        assert values == [flat.get(path) for flat in flats]
        assert None in values or len(set(values)) > 1


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(KEYS, JSON, min_size=1, max_size=5), st.data())
def test_changing_one_value_shows_exactly_that_path(config, data):
    flat = flatten_config(config)
    path = data.draw(st.sampled_from(sorted(flat)))
    changed = _replace(config, path, "changed-value")
    diff = diff_configs([config, changed])
    if flat[path] == json.dumps("changed-value"):
        assert diff.differing == {}
    else:
        assert diff.differing == {path: [flat[path], '"changed-value"']}


def _replace(config, path, value):
    """`config` with the leaf at flattened `path` replaced (found by flattening each leaf)."""
    config = copy.deepcopy(config)
    for container, key in _containers(config):
        original = container[key]
        container[key] = object()  # a marker: the one path whose value is the marker's repr
        marked = [p for p, text in flatten_config(config).items() if text.startswith("<object")]
        container[key] = original
        if marked == [path] and not (isinstance(original, (dict, list)) and original):
            container[key] = value
            return config
    raise AssertionError(f"no leaf at {path!r}")


def _containers(value):
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in list(items):
        yield value, key
        if isinstance(child, (dict, list)) and child:
            yield from _containers(child)


def test_the_paths_read_as_documented():
    config = {"model": {"sizes": [8, {}], "a.b": 1}, "lr": math.nan, "": [], "0": True}
    assert flatten_config(config) == {
        "model.sizes[0]": "8",
        "model.sizes[1]": "{}",
        'model["a.b"]': "1",
        "lr": "NaN",
        '[""]': "[]",
        "0": "true",
    }
    diff = diff_configs([{"lr": 1, "x": 1}, {"lr": 1.0, "x": 1}, {"x": 1}])
    assert diff.differing == {"lr": ["1", "1.0", None]} and diff.same == {"x": "1"}


def test_a_deeply_nested_config_flattens():
    config: list = []
    inner = config
    for _ in range(5000):  # far beyond Python's recursion limit
        inner.append([])
        inner = inner[0]
    inner.append(1)
    assert flatten_config(config) == {"[0]" * 5001: "1"}
