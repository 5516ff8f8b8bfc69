"""Config: construction, with_<field>, JSON round-trips and the errors a bad file gives."""

from __future__ import annotations

import dataclasses
import enum
import importlib
import json
import pkgutil
import typing

import pytest

import burnish as bn
from burnish.config import is_config, registered_configs


class Activation(enum.Enum):
    RELU = "relu"
    GELU = "gelu"


@bn.config
class InnerConfig:
    beta_1: float = 0.9
    beta_2: float = 0.999


@bn.config
class OtherInnerConfig:
    momentum: float = 0.5


@bn.config
class ModelConfig:
    num_classes: int
    hidden_size: int
    dropout: float = 0.5
    activation: Activation = Activation.RELU
    kernel: tuple[int, int] = (3, 3)
    pad_tokens: list[int] | None = None
    optimizer: InnerConfig = InnerConfig()
    schedule: InnerConfig | OtherInnerConfig | None = None
    name: str = "model"


def test_required_fields_positional_and_keyword():
    assert ModelConfig(10, 1024) == ModelConfig(num_classes=10, hidden_size=1024)
    with pytest.raises(TypeError, match="hidden_size"):
        ModelConfig(10)


@bn.config
class OptionConfig:
    """Burn's `Option<T>` fields: left out of the constructor, None by default."""

    label: str | None  # before a required field: keyword-only
    size: int
    note: typing.Optional[str]  # noqa: UP045 - the spelling users still write
    scale: float = 1.0


def test_option_fields_default_to_none_wherever_they_stand(tmp_path):
    config = OptionConfig(3)
    assert (config.label, config.size, config.note, config.scale) == (None, 3, None, 1.0)
    assert OptionConfig(3, label="a").label == "a"
    assert config.with_label("b").with_note("c") == OptionConfig(3, label="b", note="c")
    assert OptionConfig.from_dict({"size": 4}) == OptionConfig(4)  # a file without them
    assert OptionConfig.load(config.with_label("d").save(tmp_path / "c.json")).label == "d"
    with pytest.raises(TypeError, match="size"):
        OptionConfig()  # the required field stays required


def test_with_field_returns_a_modified_copy():
    cfg = ModelConfig(10, 1024)
    changed = cfg.with_dropout(0.2)
    assert changed.dropout == 0.2 and cfg.dropout == 0.5
    assert not hasattr(cfg, "with_num_classes")  # required fields have no with_


def test_mutable_defaults_are_not_shared():
    a, b = ModelConfig(1, 2), ModelConfig(1, 2)
    a.optimizer.beta_1 = 0.1
    assert b.optimizer.beta_1 == 0.9


def test_save_load_round_trip_with_every_kind_of_field(tmp_path):
    cfg = ModelConfig(
        10,
        64,
        activation=Activation.GELU,
        kernel=(5, 1),
        pad_tokens=[0, 1],
        schedule=OtherInnerConfig(0.7),
    )
    path = cfg.save(tmp_path / "nested" / "config.json")
    loaded = ModelConfig.load(path)
    assert loaded == cfg
    assert isinstance(loaded.kernel, tuple)
    assert loaded.activation is Activation.GELU
    text = path.read_text()
    assert text == str(cfg) + "\n"
    assert json.loads(text)["schedule"] == {"OtherInnerConfig": {"momentum": 0.7}}
    assert "\n  " in text  # pretty printed


def _write(tmp_path, data) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return str(path)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"num_classes": 1, "hidden_size": 2, "dropuot": 0.1}, r"Unknown field `dropuot`"),
        ({"num_classes": 1}, r"Missing required field `hidden_size`.*int"),
        (
            {"num_classes": "ten", "hidden_size": 2},
            r"`num_classes`: expected int, received \"ten\"",
        ),
        ({"num_classes": True, "hidden_size": 2}, r"`num_classes`: expected int, received true"),
        (
            {"num_classes": 1, "hidden_size": 2, "optimizer": {"beta_1": "x"}},
            r"`optimizer.beta_1`: expected float, received \"x\"",
        ),
        (
            {"num_classes": 1, "hidden_size": 2, "optimizer": {"beta_3": 1}},
            r"Unknown field `optimizer.beta_3`",
        ),
        ({"num_classes": 1, "hidden_size": 2, "activation": "TANH"}, r"one of \['RELU', 'GELU'\]"),
        ({"num_classes": 1, "hidden_size": 2, "kernel": [1, 2, 3]}, r"`kernel`: expected tuple"),
        ({"num_classes": 1, "hidden_size": 2, "pad_tokens": [1, "a"]}, r"`pad_tokens\[1\]`"),
        ([1, 2], r"expected a JSON object for ModelConfig"),
        ("{not json", r"not valid JSON"),
    ],
)
def test_bad_files_name_the_file_the_field_and_the_values(tmp_path, data, match):
    path = _write(tmp_path, data)
    with pytest.raises(bn.ConfigError, match=match) as info:
        ModelConfig.load(path)
    assert path in str(info.value)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(bn.ConfigError, match="does not exist"):
        ModelConfig.load(tmp_path / "nope.json")


def test_int_is_accepted_for_float():
    cfg = ModelConfig.from_dict({"num_classes": 1, "hidden_size": 2, "dropout": 1})
    assert cfg.dropout == 1.0 and isinstance(cfg.dropout, float)


def test_decorator_rejects_non_classes():
    with pytest.raises(TypeError, match="decorates a class"):
        bn.config(lambda: None)


# -- one generic round-trip over every config class the package defines --------------------


def _import_whole_package() -> None:
    import burnish

    for info in pkgutil.walk_packages(burnish.__path__, "burnish."):
        importlib.import_module(info.name)


def _sample(hint, depth=0):
    """A value of the annotated type, different from typical defaults."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        options = [a for a in args if a is not type(None)]
        return _sample(options[0], depth)
    if origin is typing.Literal:
        return args[0]
    if origin in (list, tuple):
        item = args[0] if args else int
        if origin is tuple and args and args[-1] is not Ellipsis:
            return tuple(_sample(a, depth) for a in args)
        value = [_sample(item, depth)]
        return tuple(value) if origin is tuple else value
    if origin is dict:
        return {"key": _sample(args[1] if args else int, depth)}
    if hint is bool:
        return True
    if hint is int:
        return 3
    if hint is float:
        return 0.25
    if hint is str:
        return "text"
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return list(hint)[-1]
    if is_config(hint):
        return _instance(hint, depth + 1)
    return None


def _instance(cls, depth=0):
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for field in dataclasses.fields(cls):
        required = (
            field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        )
        if required or depth == 0:
            kwargs[field.name] = _sample(hints[field.name], depth)
    return cls(**kwargs)


def test_every_config_class_round_trips(tmp_path):
    _import_whole_package()
    classes = [c for c in registered_configs() if c.__module__.startswith("burnish")]
    classes += [ModelConfig, InnerConfig]
    for cls in classes:
        cfg = _instance(cls)
        path = cfg.save(tmp_path / f"{cls.__name__}.json")
        assert cls.load(path) == cfg, cls.__name__
        assert cls.from_dict(json.loads(str(cfg))) == cfg, cls.__name__
