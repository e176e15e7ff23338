"""The one strict typed builder (cppo_bench/util/builder.py): method options, report specs, the
train config and the stored run documents take the same values for an int and a bool field.

The expected verdicts are written out by hand (an int is an integer literal, a bool is
true/false), not derived from the builder, so a consumer that grows its own rule again (the
old method options took 3.7 as 3 and true as 1) fails here."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from cppo_bench.errors import DataError
from cppo_bench.methods import METHODS, OptionError
from cppo_bench.report.specs import load_specs
from cppo_bench.store import schema
from cppo_bench.util import builder
from cppo_bench.util.keyvals import parse_pairs
from trainers.engine.config import TrainConfig
from trainers.engine.layers import ConfigError, build

INT_CASES: list[tuple[Any, bool]] = [
    (3, True),
    (3.7, False),  # never truncated to 3
    (4.0, False),  # an int field takes an integer literal
    (True, False),  # never 1
    (False, False),
    ("x", False),
    (None, False),
    (math.nan, False),
    ([3], False),
]
BOOL_CASES: list[tuple[Any, bool]] = [
    (True, True),
    (False, True),
    (1, False),  # never True
    (0, False),
    ("yes", False),
    ("x", False),
    (None, False),
]


def _method(option: str, value: Any) -> bool:
    method = "cppo" if option == "tuple_size" else "plansearch"
    try:
        METHODS.get(method).from_options({option: value})
    except OptionError as exc:
        assert f"option {option}" in str(exc)
        return False
    return True


def _spec(tmp_path: Path, key: str, value: Any) -> bool:
    (tmp_path / "t.yaml").write_text(
        yaml.safe_dump({"name": "t", "title": "T", key: value}), encoding="utf-8"
    )
    try:
        load_specs(tmp_path)
    except DataError as exc:
        assert f"t.yaml: {key}:" in str(exc)
        return False
    return True


def _train(key: str, value: Any) -> bool:
    try:
        build(TrainConfig, {key: value})
    except ConfigError as exc:
        assert f"config {key}" in str(exc)
        return False
    return True


@pytest.mark.parametrize(("value", "ok"), INT_CASES)
def test_an_int_field_takes_the_same_values_everywhere(tmp_path, value, ok):
    assert _method("tuple_size", value) is ok
    assert _spec(tmp_path, "order", value) is ok
    assert _train("epochs", value) is ok
    assert (schema.integer()(value) is None) is ok  # a stored document's count


@pytest.mark.parametrize(("value", "ok"), BOOL_CASES)
def test_a_bool_field_takes_the_same_values_everywhere(tmp_path, value, ok):
    assert _method("pseudocode", value) is ok
    assert _spec(tmp_path, "derive_k", value) is ok
    assert _train("vllm_enforce_eager", value) is ok
    assert (schema.boolean(value) is None) is ok


def test_method_options_from_the_command_line_are_refused_not_rounded():
    """`-m tuple_size=3.7` and `-m planner_max_tokens=true`, parsed as the CLI parses them."""
    cppo = METHODS.get("cppo")
    for pair, message in [
        ("tuple_size=3.7", "option tuple_size: expected int, got 3.7"),
        ("planner_max_tokens=true", "option planner_max_tokens: expected int, got true"),
        ("inference=1", "option inference: 1 is not one of joint, iid"),
    ]:
        with pytest.raises(OptionError, match=message):
            cppo.from_options(parse_pairs([pair]))
    # text a Python caller typed is read as the CLI reads it, then checked as strictly
    assert cppo.from_options({"tuple_size": "3"}).options.tuple_size == 3
    with pytest.raises(OptionError, match="got 3.7"):
        cppo.from_options({"tuple_size": "3.7"})


def test_literal_and_list_rules():
    from typing import Literal

    assert builder.coerce("x", Literal["a", "b"], "a") == "a"
    with pytest.raises(builder.BuildError, match="config x: 'c' is not one of a, b"):
        builder.coerce("x", Literal["a", "b"], "c")
    with pytest.raises(builder.BuildError, match="x: True is not one of 1, 2"):
        builder.coerce("x", Literal[1, 2], True)  # True == 1, but it is not the choice 1
    assert builder.coerce("x", tuple[int, ...], [1, 2]) == (1, 2)
    with pytest.raises(builder.BuildError, match=r"config x\[1\]: expected int"):
        builder.coerce("x", tuple[int, ...], [1, 2.5])
    with pytest.raises(builder.BuildError, match="must be a finite number"):
        builder.coerce("x", float, "inf")
