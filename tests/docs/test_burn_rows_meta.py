"""Every "same" row of docs/burn.md is exercised by a registered test, and no registration is
stale (tests/docs/burn_rows.py explains the registry)."""

from __future__ import annotations

from tests.docs import (  # noqa: F401  # imported for their `@row` registrations
    test_burn_rows_data,
    test_burn_rows_learner,
    test_burn_rows_metrics,
    test_burn_rows_modules,
    test_burn_rows_optim,
    test_burn_rows_records,
    test_burn_rows_train,
    test_burn_rows_vision,
)
from tests.docs.burn_rows import BURN_MD, REGISTRY, row_key, same_rows


def test_every_same_row_of_burn_md_has_a_test():
    rows = same_rows(BURN_MD.read_text(encoding="utf-8"))
    missing = [
        f"docs/burn.md:{r.line} ({r.section}): {r.key!r}" for r in rows if r.key not in REGISTRY
    ]
    assert not missing, (
        "these rows of docs/burn.md say 'same' but no test runs Burn's idiom of them; add a "
        "test decorated with @row(<key>) (tests/docs/test_burn_rows_*.py):\n" + "\n".join(missing)
    )


def test_every_registered_row_still_names_a_same_row():
    keys = {r.key for r in same_rows(BURN_MD.read_text(encoding="utf-8"))}
    stale = {key: tests for key, tests in REGISTRY.items() if key not in keys}
    assert not stale, (
        "these tests are registered for rows docs/burn.md no longer has (or that no longer "
        f"say 'same'); update their @row key or remove them: {stale}"
    )


def test_the_parser_finds_same_in_main_and_burnish_columns_only():
    text = "\n".join(
        [
            "## Section",
            "",
            "| Burn book | Burn main | burnish | differences |",
            "|---|---|---|---|",
            "| `a::new()` | same | `a()` | the same storage |",
            "| `b::new()` | `b::make()` | `b()` | same as Burn |",
            "| — | `c::new(x \\| y)` | same names | |",
            "",
            "| Burn | burnish |",
            "|---|---|",
            "| `d` | the same rows |",
        ]
    )
    rows = same_rows(text)
    assert [r.key for r in rows] == ["a::new()", "c::new(x \\| y)", "d"]
    assert [r.line for r in rows] == [5, 7, 11]
    assert rows[0].columns == ("Burn main",) and rows[1].columns == ("burnish",)
    assert rows[0].section == "Section"


def test_row_key_ignores_backticks_and_spacing():
    assert row_key("`model.valid()`") == row_key("model.valid()  ") == "model.valid()"
    assert row_key("`a`,\n  `b`") == "a, b"
