"""A config saved to, and loaded from, a URL beside a run on object storage (moto's S3)."""

from __future__ import annotations

import pytest

import burnish as bn
from burnish.errors import ConfigError


@bn.config
class ModelConfig:
    num_classes: int
    hidden_size: int = 64


def test_a_config_round_trips_through_a_url(bucket, s3_env, tmp_path):
    config = ModelConfig(10).with_hidden_size(128)
    url = f"s3://{bucket}/run/config.json"
    assert config.save(url) == url
    assert ModelConfig.load(url) == config
    local = config.save(tmp_path / "config.json")
    assert s3_env.objects(bucket) == {"run/config.json": local.read_bytes()}  # the same bytes


def test_a_missing_config_at_a_url_is_named(bucket):
    with pytest.raises(ConfigError, match=rf"'s3://{bucket}/run/none.json' does not exist"):
        ModelConfig.load(f"s3://{bucket}/run/none.json")
