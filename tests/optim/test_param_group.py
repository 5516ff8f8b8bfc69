"""`ParamGroup`: Burn main's matching rules on parameter paths (burn-core module/param/group.rs)."""

from __future__ import annotations

import pickle
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.optim import ParamGroup

# Burn's own unit tests, on burnish's paths.


def test_all_matches_any_parameter():
    assert ParamGroup.all().matches("anything.at.all")
    assert ParamGroup.all().matches("")


def test_path_matches_exactly():
    group = ParamGroup.from_path("model.backbone.weight")
    assert group.matches("model.backbone.weight")
    assert not group.matches("model.backbone.bias")
    assert not group.matches("model.backbone.weight2")  # not a prefix rule


def test_paths_match_any_of_them():
    group = ParamGroup.from_paths(["a.weight", "b.bias"])
    assert group.matches("a.weight") and group.matches("b.bias")
    assert not group.matches("a.bias")


def test_predicate_matches_substrings():
    group = ParamGroup.from_predicate("backbone")
    assert group.matches("model.backbone.weight")
    assert not group.matches("model.other.weight")


def test_predicates_need_every_one_and_any_predicates_one():
    every = ParamGroup.from_predicates(["encoder", "norm"])
    assert every.matches("encoder.0.norm.weight")
    assert not every.matches("encoder.0.linear.weight")
    either = ParamGroup.from_any_predicates(["backbone", "encoder"])
    assert either.matches("model.backbone.weight") and either.matches("model.encoder.weight")
    assert not either.matches("model.decoder.weight")


def test_regex_is_searched_anywhere_unless_anchored():
    group = ParamGroup.from_regex(r"^model\.layer\.[0-9]+\.weight$")
    assert group.matches("model.layer.3.weight")
    assert not group.matches("model.layer.weight")
    unanchored = ParamGroup.from_regex(r"layer\.[0-9]+")  # Rust's is_match: a search
    assert unanchored.matches("model.layer.3.weight")


def test_regexes_need_every_one_and_any_regexes_one():
    every = ParamGroup.from_regexes([r"^encoder\.", r"bias$"])
    assert every.matches("encoder.0.bias") and not every.matches("encoder.0.weight")
    either = ParamGroup.from_any_regexes([r"^model\.layer\.[0-9]+\.weight$", r"^model\.bias$"])
    assert either.matches("model.layer.3.weight") and either.matches("model.bias")
    assert not either.matches("model.layer.weight") and not either.matches("model.other.weight")


def test_fuse_combines_groups():
    fused = ParamGroup.from_path("model.layer.weight").fuse(ParamGroup.from_predicate("head"))
    assert fused.matches("model.layer.weight") and fused.matches("head.bias")
    assert not fused.matches("model.layer.bias")


def test_exclude_removes_matches_and_ignores_the_excludes_of_the_excluded_group():
    group = ParamGroup.from_predicate("backbone").exclude(
        ParamGroup.from_path("model.backbone.bias")
    )
    assert group.matches("model.backbone.weight")
    assert not group.matches("model.backbone.bias")
    excluded = ParamGroup.from_path("b").exclude(ParamGroup.from_path("w"))
    group = ParamGroup.from_path("w").exclude(excluded)
    assert group.matches("w") and not group.matches("b")
    twice = ParamGroup.all().exclude(ParamGroup.from_path("a")).exclude(ParamGroup.from_path("b"))
    assert twice.matches("c") and not twice.matches("a") and not twice.matches("b")


def test_invalid_regex_is_refused_naming_the_pattern():
    for make in (
        lambda: ParamGroup.from_regex(r"[invalid("),
        lambda: ParamGroup.from_regexes([r"[invalid("]),
        lambda: ParamGroup.from_any_regexes(["ok", r"[invalid("]),
    ):
        with pytest.raises(ValueError, match=r"Invalid regex pattern '\[invalid\(' .*Fix"):
            make()


def test_not_strings_are_refused():
    with pytest.raises(TypeError, match=r"`paths` must be a list of strings.*Received: 'ab'"):
        ParamGroup.from_paths("ab")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"`ParamGroup.fuse` takes another ParamGroup"):
        ParamGroup.all().fuse("head")  # type: ignore[arg-type]


def test_groups_pickle_and_describe_themselves():
    group = ParamGroup.from_regex(r"bias$").fuse(ParamGroup.from_predicate("norm"))
    group = group.exclude(ParamGroup.from_path("head.bias"))
    copy = pickle.loads(pickle.dumps(group))
    paths = ["a.bias", "norm.weight", "head.bias", "a.weight"]
    assert copy.select(paths) == group.select(paths) == ["a.bias", "norm.weight"]
    assert repr(group).startswith("ParamGroup.from_regex('bias$').fuse(")


# Properties over arbitrary paths.

PATHS = st.text(alphabet="ab.01_", max_size=12)


@settings(max_examples=150, deadline=None)
@given(PATHS, PATHS)
def test_path_predicate_and_escaped_regex_agree_with_python(path, text):
    assert ParamGroup.from_path(text).matches(path) == (path == text)
    assert ParamGroup.from_predicate(text).matches(path) == (text in path)
    assert ParamGroup.from_regex(re.escape(text)).matches(path) == (text in path)
    group = ParamGroup.from_predicate(text)
    assert group.exclude(group).matches(path) is False
    assert group.fuse(ParamGroup.all()).matches(path) is True
