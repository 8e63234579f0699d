"""Keys out of reach: the environment commands get, and the redaction of tool outputs.

Bash, hooks and MCP servers run with the session's environment minus every secret Comal knows
of: the provider keys (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY` and every provider's
`api_key_env`) and any variable whose name looks like a secret (`*_API_KEY`, `*_TOKEN`,
`*_SECRET`, ...). A name listed in `[sandbox] env_passthrough` is kept.

Invariants:
- `command_env` never adds a variable; it only removes.
- `Secrets.redact` replaces every occurrence of a removed variable's value (and of every
  provider key's value, even one passed through) by `[redacted: NAME]` before the output
  reaches the ledger. Values shorter than `MIN_SECRET_CHARS` are not searched: a short value
  (`1`, `true`) would blank ordinary output and is no key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

PROVIDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
"""The conventional provider variables, removed even when no provider names them."""

SECRET_NAME = re.compile(
    r"(^|_)(API_?KEY|TOKEN|SECRET|SECRET_KEY|SECRET_ACCESS_KEY|PASSWORD|PASSWD|CREDENTIALS?)$",
    re.IGNORECASE,
)
"""Names that hold a secret by convention (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, ...)."""

MIN_SECRET_CHARS = 8


def is_secret_name(name: str) -> bool:
    """Whether a variable name looks like it holds a secret."""
    return SECRET_NAME.search(name) is not None


@dataclass(frozen=True, slots=True)
class Secrets:
    """The secrets of one session's environment.

    Args:
        removed: names taken out of the commands' environment.
        values: (name, value) pairs whose values outputs are scanned for, longest first.
    """

    removed: frozenset[str] = frozenset()
    values: tuple[tuple[str, bytes], ...] = ()

    def redact(self, data: bytes) -> bytes:
        """`data` with every secret value replaced by `[redacted: NAME]`."""
        for name, value in self.values:
            if value in data:
                data = data.replace(value, f"[redacted: {name}]".encode())
        return data

    def redact_text(self, text: str) -> str:
        """`redact` for text."""
        return self.redact(text.encode("utf-8", "surrogateescape")).decode(
            "utf-8", "surrogateescape"
        )


def find_secrets(
    env: Mapping[str, str], key_names: Iterable[str], passthrough: Iterable[str] = ()
) -> Secrets:
    """The secrets of `env`: provider keys (`key_names` and `PROVIDER_KEYS`) and secret-looking
    names, less `passthrough` for what is removed (provider keys are redacted regardless)."""
    keys = {*PROVIDER_KEYS, *key_names}
    kept = set(passthrough)
    removed = frozenset(n for n in env if (n in keys or is_secret_name(n)) and n not in kept)
    scanned = {n: env[n] for n in env if n in removed or n in keys}
    pairs = [
        (name, value.encode("utf-8", "surrogateescape"))
        for name, value in scanned.items()
        if len(value) >= MIN_SECRET_CHARS
    ]
    pairs.sort(key=lambda pair: (-len(pair[1]), pair[0]))
    return Secrets(removed, tuple(pairs))


def command_env(env: Mapping[str, str], secrets: Secrets) -> dict[str, str]:
    """`env` without the removed secrets: what Bash, hooks and MCP servers run with."""
    return {k: v for k, v in env.items() if k not in secrets.removed}
