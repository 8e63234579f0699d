"""Configuration: the only module that reads environment variables and config files.

Sources, later wins: built-in defaults → `$XDG_CONFIG_HOME/comal/config.toml` →
`<workspace>/.comal/config.toml` → environment variables → CLI flags (applied by the CLI with
`dataclasses.replace`). MCP servers are also read from the workspace's `.mcp.json` (the
`mcpServers` object other agents read); a TOML server of the same name wins. API keys are
never stored here: a provider names the environment variable that holds its key, and
`api_key()` reads it at call time.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from comal.config_hooks import HOOK_EVENTS as HOOK_EVENTS
from comal.config_hooks import HookConfig as HookConfig
from comal.config_hooks import claude_hooks, toml_hooks
from comal.config_mcp import McpServerConfig as McpServerConfig
from comal.config_mcp import mcp_json_servers, mcp_servers
from comal.config_trust import untrusted_files, untrusted_warning
from comal.errors import ConfigError
from comal.messages import JSONObject, JSONValue
from comal.usage import PROMPT_CACHE_TTL_S, Price

DEFAULT_WINDOW_TOKENS = 45_000
"""Window used when neither the catalog, the server, nor the user says otherwise."""


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """One configured provider: a declared wire, never guessed."""

    name: str
    wire: str
    """A `WireApi` value: `openai-chat`, `openai-responses` or `anthropic-messages`."""
    base_url: str
    model: str = ""
    api_key_env: str | None = None
    """Name of the environment variable holding the key (the key itself is never stored)."""
    context_window: int | None = None
    max_output_tokens: int | None = None
    headers: tuple[tuple[str, str], ...] = ()
    timeout_s: float = 600.0
    """Longest wait for any one read (a byte of the stream)."""
    response_deadline_s: float = 1800.0
    """Longest a whole response may take, however steadily it trickles in."""
    max_retries: int = 4
    reasoning_effort: str | None = None
    """`low`, `medium` or `high` (`--effort` overrides it); None asks for no reasoning."""
    vision: bool | None = None
    """Whether the model takes images; None asks the built-in catalog (unknown models: no)."""
    extra_body: JSONObject = field(default_factory=dict, hash=False)
    """Server-specific request fields (`[providers.NAME.extra_body]`), merged into every request
    body last: a table merges into the field of the same name, anything else replaces it."""


class WireApi(StrEnum):
    """The wire protocols Comal speaks: what `providers.NAME.wire` may declare. Each has its
    `Wire` (`providers/wires.py`); a test holds the two lists equal."""

    OPENAI_CHAT = "openai-chat"
    OPENAI_RESPONSES = "openai-responses"
    ANTHROPIC_MESSAGES = "anthropic-messages"


DEFAULT_THRESHOLD_RATIO = 0.90
"""The automatic pressure threshold's default share of the effective window (`[context]
threshold_ratio`), read by the configuration and by the context engine's settings."""


@dataclass(frozen=True, slots=True)
class ContextConfig:
    """Budget settings of the context engine."""

    context_window: int | None = None
    """Explicit window (`--context-window`, `COMAL_CONTEXT_WINDOW`); the smaller one wins."""
    threshold_ratio: float = DEFAULT_THRESHOLD_RATIO
    """Automatic pressure threshold as a share of the effective window."""
    large_output_threshold_bytes: int | None = None
    """Outputs larger than this enter active memory as preview + exact reference; None: the
    seed's 20 KiB, and larger outputs whole while they fit the window's share."""
    output_reserve_tokens: int | None = None
    """The largest output reserve sent; None: only the model and the window limit it."""
    margin_tokens: int | None = None
    """Safety margin; None derives it from the window."""
    soft_limit: int | float | None = None
    """Quality budget: most input tokens per request (int) or a share of the window (float in
    (0, 1]); None: the automatic threshold alone."""
    cache_ttl_s: float = PROMPT_CACHE_TTL_S
    """The provider's prompt-cache time-to-live: idle longer, pressure relief may come early."""
    media_budget_tokens: int | None = None
    """The media reserve (images in view); None is a tenth of the window, at least two images."""


@dataclass(frozen=True, slots=True)
class AgentsConfig:
    """Child sessions (`[agents]`): how many run at once and their default budget."""

    max_parallel: int = 4
    """Child sessions of one coordinator running at the same time."""
    max_turns: int = 20
    """Model calls a child may make unless its task says otherwise."""
    max_tokens: int | None = None
    """Tokens (input + output, measured) a child may use; None: no token budget."""
    enabled: bool | None = None
    """Offer Task, WorkStepRun and WorkDraft (their schemas cost every request some window):
    True always, False never, None (unset) when the window is large enough (`offers_delegation`)."""


PERMISSION_PRESETS = frozenset({"destructive-delete", "push"})
"""The shipped Bash rule sets (their patterns: `tools/rule_presets.py`)."""


@dataclass(frozen=True, slots=True)
class PermissionRule:
    """Allow, ask about or deny a tool (optionally only when its main argument matches)."""

    action: str
    """`allow`, `ask` or `deny` (precedence deny > ask > allow)."""
    tool: str
    pattern: str = "*"
    preset: str = ""
    """A shipped rule set (`{ preset = "destructive-delete" }`), expanded by the permission
    policy into Bash rules of this action; such an entry's own pattern is empty."""


@dataclass(frozen=True, slots=True)
class PermissionsConfig:
    """Permission mode and rules."""

    mode: str = "workspace-write"
    """`read-only`, `workspace-write` or `full-access`."""
    rules: tuple[PermissionRule, ...] = ()
    extra_roots: tuple[str, ...] = ()
    """Directories outside the workspace that are allowed anyway."""


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """How Bash is confined in `workspace-write` (and `read-only`) mode (`[sandbox]`)."""

    writable: tuple[str, ...] = ()
    """Paths Bash may write besides the workspace and its private /tmp."""
    network: bool = False
    """Whether sandboxed commands may use the network."""
    required: bool = False
    """Refuse to run Bash when the sandbox cannot be set up (instead of warning once)."""
    env_passthrough: tuple[str, ...] = ()
    """Secret-looking variables Bash, hooks and MCP servers keep (all others are removed)."""


@dataclass(frozen=True, slots=True)
class PluginsConfig:
    """Which plugins a session loads (`[plugins] enabled = [...]`) and their own tables."""

    enabled: tuple[str, ...] = ()
    """Entry-point names in the `comal.plugins` group, in load order (`--plugin` adds)."""
    settings: Mapping[str, JSONObject] = field(default_factory=dict)
    """`[plugins.NAME]` tables, given to each plugin as they are."""


def _plugins(raw: object) -> PluginsConfig:
    if not isinstance(raw, dict):
        raise ConfigError('plugins must be a table: [plugins] enabled = ["chrome"]')
    enabled = raw.get("enabled", [])
    if not isinstance(enabled, list) or not all(isinstance(n, str) for n in enabled):
        raise ConfigError("plugins.enabled must be a list of plugin names")
    settings: dict[str, JSONObject] = {}
    for name, table in raw.items():
        if name == "enabled":
            continue
        if not isinstance(table, dict):
            raise ConfigError(f"plugins.{name} must be a table")
        value = _json_value(table, f"plugins.{name}")
        if isinstance(value, dict):
            settings[str(name)] = value
    return PluginsConfig(tuple(dict.fromkeys(enabled)), settings)


@dataclass(frozen=True, slots=True)
class Config:
    """Everything Comal reads from files and the environment, resolved once."""

    home: Path
    """Where the ledger lives (`COMAL_HOME`, else `$XDG_DATA_HOME/comal`)."""
    config_dir: Path
    workspace: Path
    providers: Mapping[str, ProviderConfig] = field(default_factory=dict)
    default_provider: str | None = None
    context: ContextConfig = ContextConfig()
    permissions: PermissionsConfig = PermissionsConfig()
    sandbox: SandboxConfig = SandboxConfig()
    checks: tuple[str, ...] = ()
    """Commands `finish_call` runs before a session may close."""
    max_turns: int = 50
    env: Mapping[str, str] = field(default_factory=dict)
    """The environment this config was resolved from (for keys and local-server discovery)."""
    mcp_servers: Mapping[str, McpServerConfig] = field(default_factory=dict)
    """Configured MCP servers by name, sorted by name (disabled ones included)."""
    agents: AgentsConfig = AgentsConfig()
    hooks: tuple[HookConfig, ...] = ()
    """Hooks from `[[hooks.EVENT]]` tables and the workspace's `.claude/settings*.json`."""
    prices: Mapping[str, Price] = field(default_factory=dict)
    """`[prices."model"]` tables: prices that override (or add to) the built-in ones."""
    warnings: tuple[str, ...] = ()
    """Problems that did not stop loading (unknown keys, a broken file ignored when lenient)."""
    plugins: PluginsConfig = PluginsConfig()
    untrusted: tuple[Path, ...] = ()
    """Project files whose hooks and MCP servers were left out: not trusted (`config_trust`)."""
    ledger_url: str | None = None
    """`COMAL_LEDGER_URL`, else `[ledger] url`: a `postgresql://` URL (or `sqlite:PATH`) that
    puts the ledger there instead of `ledger_path`."""

    @property
    def ledger_path(self) -> Path:
        """The embedded ledger's database file (the default ledger)."""
        return self.home / "ledger.db"

    @property
    def key_names(self) -> tuple[str, ...]:
        """Every variable a provider reads its key from (`api_key_env`)."""
        names = (p.api_key_env for p in self.providers.values() if p.api_key_env)
        return tuple(dict.fromkeys(names))

    @property
    def ledger(self) -> str | Path:
        """What `Ledger.open` is given: the configured URL, else `ledger_path`."""
        return self.ledger_url or self.ledger_path

    def api_key(self, provider: ProviderConfig) -> str | None:
        """The provider's API key, read from its environment variable at call time."""
        if provider.api_key_env is None:
            return None
        return self.env.get(provider.api_key_env)


def _xdg(env: Mapping[str, str], var: str, fallback: str) -> Path:
    value = env.get(var)
    if value:
        return Path(value)
    return Path(env.get("HOME", str(Path.home()))) / fallback


PRICE_FIELDS = ("input", "cached_input", "cache_write", "output")
"""The keys of a `[prices."model"]` table (US dollars per million tokens)."""


_ANY = "*"
KNOWN_KEYS: Mapping[str, frozenset[str]] = {
    "": frozenset(
        {
            "default_provider",
            "checks",
            "max_turns",
            "providers",
            "context",
            "permissions",
            "mcp_servers",
            "sandbox",
            "plugins",
            "agents",
            "hooks",
            "prices",
            "ledger",
        }
    ),
    "ledger": frozenset({"url"}),
    "providers.*": frozenset(
        {
            "wire",
            "base_url",
            "model",
            "api_key_env",
            "context_window",
            "max_output_tokens",
            "headers",
            "timeout_s",
            "response_deadline_s",
            "max_retries",
            "extra_body",
            "vision",
            "reasoning_effort",
        }
    ),
    "context": frozenset(
        {
            "context_window",
            "threshold_ratio",
            "large_output_threshold_bytes",
            "output_reserve_tokens",
            "margin_tokens",
            "soft_limit",
            "cache_ttl_s",
            "media_budget_tokens",
        }
    ),
    "permissions": frozenset({"mode", "allow", "ask", "deny", "extra_roots"}),
    "permissions.*[]": frozenset({"tool", "pattern", "preset"}),
    "mcp_servers.*": frozenset(
        {
            "command",
            "args",
            "env",
            "url",
            "headers",
            "enabled",
            "timeout_s",
            "startup_timeout_s",
            "transport",
        }
    ),
    "sandbox": frozenset({"writable", "network", "required", "env_passthrough"}),
    "agents": frozenset({"enabled", "max_parallel", "max_turns", "max_tokens"}),
    "hooks": frozenset(HOOK_EVENTS),
    "hooks.*[]": frozenset({"matcher", "command", "timeout_s", "timeout"}),
    "prices.*": frozenset({*PRICE_FIELDS, "as_of"}),
}
"""Every key a config file may hold, by table (`*` any name, `[]` each table of a list).

Free-form tables (`headers`, `env`, `extra_body`, `plugins`: each plugin's own settings) are
not listed, so their keys are never
questioned. A key outside these sets is warned about, with the closest known one.
"""


def _unknown_keys(raw: Mapping[str, Any], path: Path) -> list[str]:
    """One warning per key of `raw` that no table of KNOWN_KEYS knows."""
    found: list[str] = []

    def check(table: Mapping[str, Any], shape: str, where: str) -> None:
        known = KNOWN_KEYS[shape]
        for key, value in table.items():
            name = f"{where}{key}"
            if key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
                hint = f" (did you mean `{where}{close[0]}`?)" if close else ""
                found.append(f"{path}: unknown key `{name}`{hint}; it is ignored")
                continue
            child = f"{shape}.{key}" if shape else key
            if isinstance(value, Mapping) and child in KNOWN_KEYS:
                check(value, child, f"{name}.")
            elif isinstance(value, Mapping) and f"{child}.*" in KNOWN_KEYS:
                for sub, inner in value.items():
                    if isinstance(inner, Mapping):
                        check(inner, f"{child}.*", f"{name}.{sub}.")
            elif isinstance(value, list) and f"{shape}.*[]" in KNOWN_KEYS:
                for index, item in enumerate(value):
                    if isinstance(item, Mapping):
                        check(item, f"{shape}.*[]", f"{name}[{index}].")

    check(raw, "", "")
    return found


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _int_or_none(raw: object) -> int | None:
    """A positive integer from the config file, or None when unset."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw <= 0:
        raise ConfigError(f"expected a positive integer, got {raw!r}")
    return raw


def _int_env(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw.replace("_", "").replace(",", ""))
    except ValueError as exc:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from exc
    if value <= 0:
        raise ConfigError(f"{name} must be positive, got {value}")
    return value


EFFORTS = ("low", "medium", "high")
"""Reasoning efforts; each wire maps them (Chat, Responses, Anthropic `thinking` budget)."""


def check_effort(value: object, where: str) -> str | None:
    """A valid effort, or None (raises ConfigError for anything else)."""
    if value is None:
        return None
    if value not in EFFORTS:
        raise ConfigError(f"{where} must be one of {', '.join(EFFORTS)} (got {value!r})")
    return str(value)


def _prices(raw: Mapping[str, Any]) -> dict[str, Price]:
    """The configured prices, by model name (raises ConfigError for a bad one)."""
    found: dict[str, Price] = {}
    for model, table in dict(raw).items():
        where = f'prices."{model}"'
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where} must be a table of {', '.join(PRICE_FIELDS)}")
        values: list[float] = []
        for key in PRICE_FIELDS:
            value = table.get(key, table.get("input") if key == "cache_write" else None)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ConfigError(
                    f"{where}.{key} must be a non-negative number of US dollars per million"
                    f" tokens (got {value!r})"
                )
            values.append(float(value))
        as_of = str(table.get("as_of", "config"))
        found[str(model)] = Price(
            values[0], values[1], values[2], values[3], as_of=as_of, source="configuration"
        )
    return found


def _provider(name: str, raw: Mapping[str, Any]) -> ProviderConfig:
    wire = raw.get("wire")
    if wire not in tuple(WireApi):
        *first, last = tuple(WireApi)
        raise ConfigError(
            f"providers.{name}.wire must be {', '.join(first)} or {last}"
            f" (got {wire!r}); the wire is declared, never guessed"
        )
    base_url = raw.get("base_url")
    if not isinstance(base_url, str) or not base_url:
        raise ConfigError(f"providers.{name}.base_url is required")
    headers = raw.get("headers", {})
    extra = raw.get("extra_body", {})
    if not isinstance(extra, Mapping):
        raise ConfigError(f"providers.{name}.extra_body must be a table")
    vision = raw.get("vision")
    if vision is not None and not isinstance(vision, bool):
        raise ConfigError(f"providers.{name}.vision must be true or false")
    return ProviderConfig(
        name=name,
        wire=wire,
        base_url=base_url.rstrip("/"),
        model=str(raw.get("model", "")),
        api_key_env=raw.get("api_key_env"),
        context_window=raw.get("context_window"),
        max_output_tokens=raw.get("max_output_tokens"),
        headers=tuple(sorted((str(k), str(v)) for k, v in dict(headers).items())),
        timeout_s=float(raw.get("timeout_s", 600.0)),
        response_deadline_s=_positive(raw.get("response_deadline_s", 1800.0), name),
        max_retries=int(raw.get("max_retries", 4)),
        reasoning_effort=check_effort(
            raw.get("reasoning_effort"), f"providers.{name}.reasoning_effort"
        ),
        vision=vision,
        extra_body={
            str(k): _json_value(v, f"providers.{name}.extra_body.{k}") for k, v in extra.items()
        },
    )


def _positive(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"providers.{name}.response_deadline_s must be a positive number")
    return float(value)


def _json_value(value: object, where: str) -> JSONValue:
    """A TOML value as JSON; dates and times have no JSON form and are refused."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        return [_json_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        return {str(k): _json_value(v, f"{where}.{k}") for k, v in value.items()}
    raise ConfigError(f"{where}: {type(value).__name__} values have no JSON form; use a string")


def _env_providers(env: Mapping[str, str]) -> dict[str, ProviderConfig]:
    """Providers implied by the conventional environment variables."""
    found: dict[str, ProviderConfig] = {}
    if env.get("ANTHROPIC_API_KEY"):
        found["anthropic"] = ProviderConfig(
            name="anthropic",
            wire="anthropic-messages",
            base_url=env.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com").rstrip("/"),
            model=env.get("ANTHROPIC_MODEL", "claude-sonnet-4-6"),
            api_key_env="ANTHROPIC_API_KEY",
        )
    if env.get("OPENAI_API_KEY"):
        found["openai"] = ProviderConfig(
            name="openai",
            wire="openai-chat",
            base_url=env.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/"),
            model=env.get("OPENAI_MODEL", "gpt-5"),
            api_key_env="OPENAI_API_KEY",
        )
    return found


def _sandbox(raw: object) -> SandboxConfig:
    if not isinstance(raw, Mapping):
        raise ConfigError("sandbox must be a table")
    writable = raw.get("writable", [])
    if not isinstance(writable, list) or not all(isinstance(p, str) for p in writable):
        raise ConfigError("sandbox.writable must be a list of paths")
    flags = {key: raw.get(key, False) for key in ("network", "required")}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise ConfigError(f"sandbox.{key} must be true or false, got {value!r}")
    passthrough = raw.get("env_passthrough", [])
    if not isinstance(passthrough, list) or not all(isinstance(n, str) for n in passthrough):
        raise ConfigError("sandbox.env_passthrough must be a list of variable names")
    return SandboxConfig(tuple(writable), flags["network"], flags["required"], tuple(passthrough))


def _soft_limit(value: object) -> int | float | None:
    """`[context] soft_limit`: tokens (an integer ≥ 1,000), a share of the window (a number in
    (0, 1]), or a string such as "40000" or "60%"."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError as exc:
            raise ConfigError(
                f"context.soft_limit must be tokens or a share of the window, got {text!r}"
            ) from exc
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"context.soft_limit must be tokens or a share, got {value!r}")
    if 0 < value <= 1:
        return float(value)
    if value >= 1_000 and float(value).is_integer():
        return int(value)
    raise ConfigError(
        'context.soft_limit must be a share of the window in (0, 1] (e.g. 0.5 or "50%") or'
        f" at least 1000 tokens, got {value!r}"
    )


def _cache_ttl(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigError(f"context.cache_ttl_s must be seconds ≥ 0, got {value!r}")
    return float(value)


def load_config(
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    *,
    lenient: bool = False,
    gated: bool = False,
) -> Config:
    """Resolve the configuration from files and the environment.

    Args:
        env: the environment (defaults to `os.environ`).
        cwd: the workspace (defaults to the current directory).
        lenient: for read-only commands: a broken config file becomes a warning and the files
            are ignored (defaults and the environment still apply), instead of an error.
        gated: for commands that run a session: the hooks and MCP servers of project files
            the user has not trusted (`config_trust`) are left out, with a warning each.

    Raises:
        ConfigError: a file or variable is invalid (files only when not `lenient`).
    """
    env = dict(os.environ if env is None else env)
    workspace = (cwd or Path.cwd()).resolve()
    config_dir = _xdg(env, "XDG_CONFIG_HOME", ".config") / "comal"
    home = (
        Path(env["COMAL_HOME"])
        if env.get("COMAL_HOME")
        else _xdg(env, "XDG_DATA_HOME", ".local/share") / "comal"
    )
    files = (config_dir / "config.toml", workspace / ".comal" / "config.toml")
    untrusted = untrusted_files(workspace, config_dir) if gated else ()
    held = tuple(f.path for f in untrusted)
    try:
        raw: dict[str, Any] = {}
        warnings: list[str] = [untrusted_warning(f) for f in untrusted]
        for path in files:
            loaded = _read_toml(path)
            warnings.extend(_unknown_keys(loaded, path))
            if path in held:
                loaded = {k: v for k, v in loaded.items() if k not in ("hooks", "mcp_servers")}
            raw = _merge(raw, loaded)
        try:
            return _resolve(env, workspace, config_dir, home, raw, tuple(warnings), held)
        except (TypeError, ValueError, AttributeError) as exc:
            # A value of the wrong type (`max_turns = "many"`, a string where a table goes).
            raise ConfigError(f"invalid configuration value: {exc}") from exc
    except ConfigError as exc:
        if not lenient:
            raise
        note = f"{exc.message} — the config files are ignored for this read-only command"
        return _resolve(env, workspace, config_dir, home, {}, (note,))


def _resolve(
    env: dict[str, str],
    workspace: Path,
    config_dir: Path,
    home: Path,
    raw: dict[str, Any],
    warnings: tuple[str, ...],
    untrusted: tuple[Path, ...] = (),
) -> Config:
    providers = _env_providers(env)
    held = workspace / ".mcp.json" in untrusted
    project_servers = {} if held else mcp_json_servers(workspace, env)
    for name, praw in dict(raw.get("providers", {})).items():
        providers[name] = _provider(name, praw)

    craw = dict(raw.get("context", {}))
    threshold = float(craw.get("threshold_ratio", DEFAULT_THRESHOLD_RATIO))
    if not 0.1 <= threshold <= 1.0:
        raise ConfigError(f"context.threshold_ratio must be between 0.1 and 1.0, got {threshold}")
    context = ContextConfig(
        context_window=_int_env(env, "COMAL_CONTEXT_WINDOW") or craw.get("context_window"),
        threshold_ratio=threshold,
        large_output_threshold_bytes=_int_env(env, "COMAL_LARGE_OUTPUT_THRESHOLD_BYTES")
        or _int_or_none(craw.get("large_output_threshold_bytes")),
        output_reserve_tokens=craw.get("output_reserve_tokens"),
        margin_tokens=craw.get("margin_tokens"),
        media_budget_tokens=craw.get("media_budget_tokens"),
        soft_limit=_soft_limit(craw.get("soft_limit")),
        cache_ttl_s=_cache_ttl(craw.get("cache_ttl_s", PROMPT_CACHE_TTL_S)),
    )

    praw = dict(raw.get("permissions", {}))
    mode = str(praw.get("mode", "workspace-write"))
    if mode not in ("read-only", "workspace-write", "full-access"):
        raise ConfigError(
            f"permissions.mode must be read-only, workspace-write or full-access, got {mode!r}"
        )
    for r in (r for action in ("allow", "ask", "deny") for r in praw.get(action, [])):
        if "preset" in r and r["preset"] not in PERMISSION_PRESETS:
            known = ", ".join(sorted(PERMISSION_PRESETS))
            raise ConfigError(f"unknown permission preset {r['preset']!r} (known: {known})")
    rules = tuple(
        PermissionRule(action, "Bash", "", preset=str(r["preset"]))
        if "preset" in r
        else PermissionRule(action, str(r.get("tool", "*")), str(r.get("pattern", "*")))
        for action in ("allow", "ask", "deny")
        for r in praw.get(action, [])
    )
    permissions = PermissionsConfig(
        mode=mode, rules=rules, extra_roots=tuple(str(p) for p in praw.get("extra_roots", []))
    )
    return Config(
        agents=_agents(dict(raw.get("agents", {}))),
        home=home,
        config_dir=config_dir,
        workspace=workspace,
        providers=providers,
        default_provider=raw.get("default_provider"),
        prices=_prices(raw.get("prices", {})),
        hooks=(*toml_hooks(raw.get("hooks", {})), *claude_hooks(workspace, untrusted)),
        context=context,
        permissions=permissions,
        sandbox=_sandbox(raw.get("sandbox", {})),
        checks=tuple(str(c) for c in raw.get("checks", [])),
        max_turns=int(raw.get("max_turns", 50)),
        env=env,
        plugins=_plugins(raw.get("plugins", {})),
        mcp_servers=dict(
            sorted((project_servers | mcp_servers(raw.get("mcp_servers", {}), env)).items())
        ),
        warnings=warnings,
        untrusted=untrusted,
        ledger_url=_ledger_url(env, raw.get("ledger", {})),
    )


LEDGER_SCHEMES = ("postgresql://", "postgres://", "sqlite:")
"""How a ledger URL may start."""


def _ledger_url(env: Mapping[str, str], table: object) -> str | None:
    """`COMAL_LEDGER_URL`, else `[ledger] url`, checked for a known scheme (None: the default).

    Raises:
        ConfigError: a URL of another scheme, or a `ledger` value that is not a table.
    """
    if not isinstance(table, Mapping):
        raise ConfigError("ledger must be a table")
    url = env.get("COMAL_LEDGER_URL") or table.get("url")
    if url is None or url == "":
        return None
    if not isinstance(url, str) or not url.startswith(LEDGER_SCHEMES):
        raise ConfigError(
            f"the ledger URL must start with postgresql://, postgres:// or sqlite:, got {url!r}"
        )
    return url


def _agents(raw: Mapping[str, Any]) -> AgentsConfig:
    """`[agents]`, validated.

    Raises:
        ConfigError: an unknown key, or a value that is not a positive integer.
    """
    unknown = sorted(set(raw) - KNOWN_KEYS["agents"])
    if unknown:
        raise ConfigError(f"unknown [agents] keys: {', '.join(unknown)}")

    def positive(key: str) -> int | None:
        value = raw.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"agents.{key} must be a positive integer, got {value!r}")
        return value

    enabled = raw.get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        raise ConfigError(f"agents.enabled must be true or false, got {enabled!r}")
    defaults = AgentsConfig()
    return AgentsConfig(
        enabled=enabled,
        max_parallel=positive("max_parallel") or defaults.max_parallel,
        max_turns=positive("max_turns") or defaults.max_turns,
        max_tokens=positive("max_tokens"),
    )


def add_workspace_rule(workspace: Path, rule: PermissionRule) -> Path:
    """Append `rule` to `<workspace>/.comal/config.toml`, keeping the file's other content.

    Returns:
        The file written.

    Raises:
        ConfigError: the file exists but is not valid TOML, or `permissions` is not a table.
    """
    import tomlkit  # only the TUI's "always allow" writes configuration

    path = workspace / ".comal" / "config.toml"
    try:
        doc = (
            tomlkit.parse(path.read_text(encoding="utf-8"))
            if path.is_file()
            else tomlkit.document()
        )
    except tomlkit.exceptions.ParseError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    section = doc.setdefault("permissions", tomlkit.table())
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: permissions must be a table")
    entries = section.setdefault(rule.action, tomlkit.array())
    entry = tomlkit.inline_table()
    entry.update({"tool": rule.tool, "pattern": rule.pattern})
    entries.append(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomlkit.dumps(doc), encoding="utf-8")
    return path
