"""`comal models` and `comal doctor` against a fake server; secrets are never printed."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest

from comal.cli import cmd_models
from comal.testing.fake_server import FakeServer


def main(argv: list[str]) -> int:
    """Run one of this module's subcommands (only its own parser, as `comal` would)."""
    parser = argparse.ArgumentParser(prog="comal")
    cmd_models.register(parser.add_subparsers())
    args = parser.parse_args(argv)
    return int(asyncio.run(args.func(args)))


def write_config(home: Path, base_url: str) -> None:
    config_dir = home / "config" / "comal"
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.toml").write_text(
        f"""
default_provider = "local"
[providers.local]
wire = "openai-chat"
base_url = "{base_url}"
api_key_env = "LOCAL_KEY"
model = "local-model"
""",
        encoding="utf-8",
    )


def test_models_json_shows_discovered_window(isolated_env, monkeypatch, capsys) -> None:
    with FakeServer(
        advertised_window=24_576, discovery_style="vllm", model="local-model"
    ) as server:
        write_config(isolated_env, server.openai_base_url)
        monkeypatch.chdir(isolated_env)
        assert main(["models", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["provider"], row["context_window"], row["window_source"]) == (
        "local",
        24_576,
        "discovered",
    )
    assert row["default"] is True


def test_models_explicit_env_window_wins_when_smaller(isolated_env, monkeypatch, capsys) -> None:
    with FakeServer(advertised_window=24_576, discovery_style="vllm") as server:
        write_config(isolated_env, server.openai_base_url)
        monkeypatch.chdir(isolated_env)
        monkeypatch.setenv("COMAL_CONTEXT_WINDOW", "10000")
        assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "10,000 (explicit)" in out


def test_doctor_reports_reachability_and_key_presence_without_the_key(
    isolated_env, monkeypatch, capsys
) -> None:
    secret = "sk-local-very-secret-123"
    with FakeServer() as server:
        write_config(isolated_env, server.openai_base_url)
        monkeypatch.chdir(isolated_env)
        monkeypatch.setenv("LOCAL_KEY", secret)
        assert main(["doctor", "--json"]) == 0
        report = capsys.readouterr().out
        monkeypatch.delenv("LOCAL_KEY")
        assert main(["doctor"]) == 2  # a missing key is a configuration error
        plain = capsys.readouterr().out
    assert secret not in report
    data = json.loads(report)
    assert data["ok"] is True
    assert data["providers"][0]["reachable"] is True
    assert data["providers"][0]["api_key"] == "set"
    assert "LOCAL_KEY: NOT SET" in plain


def test_doctor_unreachable_server(isolated_env, monkeypatch, capsys) -> None:
    with FakeServer() as server:
        dead = server.openai_base_url
    write_config(isolated_env, dead)
    monkeypatch.chdir(isolated_env)
    monkeypatch.setenv("LOCAL_KEY", "k")
    assert main(["doctor"]) == 4  # a provider error, as the README table says
    assert "unreachable" in capsys.readouterr().out


@pytest.mark.parametrize("command", [["models"], ["doctor"]])
def test_no_providers_configured(isolated_env, monkeypatch, capsys, command) -> None:
    monkeypatch.chdir(isolated_env)
    main(command)
    assert "no providers configured" in capsys.readouterr().err


def test_doctor_names_the_url_status_and_fix_for_a_base_url_without_v1(
    isolated_env, monkeypatch, capsys
) -> None:
    with FakeServer(discovery_style="none") as server:
        write_config(isolated_env, server.base_url)  # no /v1
        monkeypatch.chdir(isolated_env)
        monkeypatch.setenv("LOCAL_KEY", "k")
        assert main(["doctor", "--probe"]) == 4  # a provider error (README exit-code table)
    out = capsys.readouterr().out
    assert f"{server.base_url}/models  HTTP 404" in out
    assert f"try {server.base_url}/v1" in out
    assert f"{server.base_url}/chat/completions" in out  # the probe's URL


def test_doctor_probe_sends_one_token(isolated_env, monkeypatch, capsys) -> None:
    with FakeServer(["pong"], model="local-model") as server:
        write_config(isolated_env, server.openai_base_url)
        monkeypatch.chdir(isolated_env)
        monkeypatch.setenv("LOCAL_KEY", "k")
        assert main(["doctor", "--probe", "--json"]) == 0
        (request,) = server.received
    report = json.loads(capsys.readouterr().out)
    checks = report["providers"][0]["checks"]
    assert [c["what"] for c in checks] == ["models", "probe"]
    assert all(c["ok"] for c in checks)
    assert request.body["max_tokens"] == 1
