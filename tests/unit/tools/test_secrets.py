"""Which variables commands lose, which values outputs are scanned for, and the redaction."""

from __future__ import annotations

from comal.tools.secrets import Secrets, command_env, find_secrets, is_secret_name

ENV = {
    "PATH": "/usr/bin",
    "HOME": "/home/u",
    "OPENAI_API_KEY": "sk-openai-123456",
    "LOCAL_KEY": "local-key-123456",
    "GITHUB_TOKEN": "ghp-123456789",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-12345",
    "DB_PASSWORD": "short",
    "TOKENIZERS_PARALLELISM": "false",
    "KEPT_TOKEN": "kept-token-123456",
}


def test_provider_keys_and_secret_names_are_removed_unless_passed_through() -> None:
    secrets = find_secrets(ENV, ["LOCAL_KEY"], passthrough=["KEPT_TOKEN"])
    assert command_env(ENV, secrets) == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "TOKENIZERS_PARALLELISM": "false",
        "KEPT_TOKEN": "kept-token-123456",
    }


def test_values_are_redacted_longest_first_and_short_ones_left() -> None:
    secrets = find_secrets(ENV, ["LOCAL_KEY"], passthrough=["KEPT_TOKEN"])
    text = b"a sk-openai-123456 b local-key-123456 c short d kept-token-123456"
    assert secrets.redact(text) == (
        b"a [redacted: OPENAI_API_KEY] b [redacted: LOCAL_KEY] c short d kept-token-123456"
    )
    assert secrets.redact_text("x ghp-123456789") == "x [redacted: GITHUB_TOKEN]"


def test_a_passed_through_provider_key_is_still_redacted() -> None:
    secrets = find_secrets(ENV, [], passthrough=["OPENAI_API_KEY"])
    assert "OPENAI_API_KEY" in command_env(ENV, secrets)
    assert secrets.redact(b"sk-openai-123456") == b"[redacted: OPENAI_API_KEY]"


def test_secret_names() -> None:
    names = ["GITHUB_TOKEN", "API_KEY", "MY_APIKEY", "NPM_TOKEN", "X_SECRET", "PGPASSWORD"]
    assert [n for n in names if is_secret_name(n)] == names[:5]
    assert not is_secret_name("TOKENIZERS_PARALLELISM")
    assert Secrets().redact(b"nothing") == b"nothing"
