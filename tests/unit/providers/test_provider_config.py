"""Providers from TOML and the conventional environment variables; keys stay out of config."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.config import load_config
from comal.errors import ConfigError

TOML = """
default_provider = "local"

[providers.local]
wire = "openai-chat"
base_url = "http://127.0.0.1:8080/v1/"
api_key_env = "LOCAL_KEY"
model = "qwen2.5-coder:7b"
context_window = 32768
"""


def test_providers_from_workspace_toml_and_env(tmp_path: Path) -> None:
    (tmp_path / ".comal").mkdir()
    (tmp_path / ".comal" / "config.toml").write_text(TOML, encoding="utf-8")
    env = {
        "HOME": str(tmp_path),
        "LOCAL_KEY": "secret-local",
        "ANTHROPIC_API_KEY": "sk-ant-x",
        "ANTHROPIC_BASE_URL": "http://proxy/",
    }
    config = load_config(env=env, cwd=tmp_path)
    local = config.providers["local"]
    assert (local.wire, local.base_url, local.model, local.context_window) == (
        "openai-chat",
        "http://127.0.0.1:8080/v1",
        "qwen2.5-coder:7b",
        32768,
    )
    assert config.default_provider == "local"
    assert config.api_key(local) == "secret-local"
    anthropic = config.providers["anthropic"]
    assert (anthropic.wire, anthropic.base_url, anthropic.api_key_env) == (
        "anthropic-messages",
        "http://proxy",
        "ANTHROPIC_API_KEY",
    )
    assert "secret-local" not in repr(config.providers)
    assert "sk-ant-x" not in repr(config.providers)


def test_undeclared_wire_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".comal").mkdir()
    (tmp_path / ".comal" / "config.toml").write_text(
        '[providers.x]\nbase_url = "http://h"\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="never guessed"):
        load_config(env={"HOME": str(tmp_path)}, cwd=tmp_path)
