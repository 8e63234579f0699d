"""`comal doctor`: does each configured provider really answer, and if not, what to change; and
can the ledger be reached, with this Comal's schema and (on PostgreSQL) the right role rights.

Its first line says whether bubblewrap confines Bash here (a sandbox that is missing is said,
whatever `[sandbox] required` is; it does not change the exit code, which is the providers').

For every provider it GETs the models endpoint of the configured wire (`{base_url}/models` for
the OpenAI wires, `/v1/models` for Anthropic), then POSTs an empty request to the wire's own
endpoint (a server that speaks the wire refuses it as invalid, one that does not answers 404:
nothing is generated, nothing is billed) or, with `--probe`, sends a 1-token request through the
real adapter instead. With no provider configured it checks the model server `comal -p` would
use, the first one found on loopback. Each line names the URL, the status and the likely fix (a
base URL without `/v1`, a wire the server does not speak, a missing key). Model servers found on
loopback are listed too. No key is ever printed: only its variable's name and whether it is set.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from typing import Any

import httpx2

from comal.cli.configuring import run_config
from comal.config import Config, ProviderConfig
from comal.errors import ProviderError
from comal.ledger.health import check_ledger
from comal.messages import user_text
from comal.providers.base import Capabilities, ModelRequest
from comal.providers.factory import make_adapter
from comal.providers.identify import detect_loopback
from comal.providers.reply import collect
from comal.providers.wires import wire_of
from comal.tools.sandbox import probe

_TIMEOUT = httpx2.Timeout(5.0)


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the report."""

    ok: bool
    what: str
    """`models`, `probe` or `key`."""
    url: str
    status: str
    fix: str = ""


def models_url(provider: ProviderConfig) -> str:
    """The models endpoint of the provider's wire."""
    return wire_of(provider).models_url(provider.base_url)


def _fix_for(provider: ProviderConfig, status: int) -> str:
    base = provider.base_url.rstrip("/")
    if status in (401, 403):
        env = provider.api_key_env or "api_key_env"
        return f"the server refused the credentials: check {env}"
    if status in (404, 405, 501):
        wire = wire_of(provider)
        if wire.versioned_base and not base.endswith("/v1"):
            return f"base_url usually ends with /v1: try {base}/v1"
        return f"this server may not speak {provider.wire}: try wire = {str(wire.fallback)!r}"
    return ""


def _headers(config: Config, provider: ProviderConfig) -> dict[str, str]:
    key = config.api_key(provider)
    if not key:
        return {}
    return wire_of(provider).listing_headers(key)


async def check_models(
    client: httpx2.AsyncClient, config: Config, provider: ProviderConfig
) -> Check:
    """GET the models endpoint and say what the answer means."""
    url = models_url(provider)
    try:
        response = await client.get(url, headers=_headers(config, provider), timeout=_TIMEOUT)
    except httpx2.HTTPError as exc:
        return Check(
            False, "models", url, f"unreachable ({type(exc).__name__})", "is the server running?"
        )
    status = f"HTTP {response.status_code}"
    if response.status_code != 200:
        return Check(False, "models", url, status, _fix_for(provider, response.status_code))
    try:
        listing = response.json()
    except ValueError:
        return Check(False, "models", url, f"{status}, not JSON", _fix_for(provider, 404))
    data = listing.get("data") if isinstance(listing, dict) else None
    ids = [str(e.get("id")) for e in data if isinstance(e, dict)] if isinstance(data, list) else []
    if provider.model and ids and provider.model not in ids:
        shown = ", ".join(ids[:5]) + (" …" if len(ids) > 5 else "")
        return Check(
            True, "models", url, f"{status}, {len(ids)} models", f"model not listed: {shown}"
        )
    return Check(True, "models", url, f"{status}, {len(ids)} models")


async def check_wire(client: httpx2.AsyncClient, config: Config, provider: ProviderConfig) -> Check:
    """POST an empty body to the wire's endpoint: refused as invalid (400, 422) means the server
    speaks the wire; 404, 405 or 501 means it does not."""
    caps = Capabilities(context_window=4_096, max_output_tokens=1, window_source="explicit")
    adapter = make_adapter(
        provider, client=client, api_key=config.api_key(provider), capabilities=caps
    )
    url = adapter.url()
    headers = _headers(config, provider) | {"content-type": "application/json"}
    try:
        response = await client.post(url, content=b"{}", headers=headers, timeout=_TIMEOUT)
    except httpx2.HTTPError as exc:
        return Check(
            False, "wire", url, f"unreachable ({type(exc).__name__})", "is the server running?"
        )
    code = response.status_code
    status = f"HTTP {code} to an empty request"
    if code in (401, 403, 404, 405, 501):
        return Check(False, "wire", url, status, _fix_for(provider, code))
    return Check(True, "wire", url, status)


async def check_probe(
    client: httpx2.AsyncClient, config: Config, provider: ProviderConfig
) -> Check:
    """Send a 1-token request through the real adapter (no retries)."""
    caps = Capabilities(context_window=4_096, max_output_tokens=1, window_source="explicit")
    adapter = make_adapter(
        provider, client=client, api_key=config.api_key(provider), capabilities=caps
    )
    url = adapter.url()
    request = ModelRequest(provider.model, "", (user_text("ping"),), max_output_tokens=1)
    try:
        reply = await collect(adapter.stream(request))
    except ProviderError as exc:
        fix = _fix_for(provider, exc.status) if exc.status is not None else ""
        return Check(False, "probe", url, f"{exc.code}: {exc.message[:160]}", fix)
    return Check(True, "probe", url, f"answered (finish {reply.finish})")


def sandbox_state(config: Config) -> tuple[bool, str]:
    """(confined, what `doctor` says about the Bash sandbox in the configured mode)."""
    mode = config.permissions.mode
    if mode == "full-access":
        return False, "Bash runs unconfined: permissions.mode is full-access"
    why = probe()
    if why is None:
        return True, f"bubblewrap confines Bash ({mode})"
    if config.sandbox.required:
        return False, f"{why}; [sandbox] required = true, so Bash is refused"
    return False, (
        f"{why}; [sandbox] required = false, so Bash runs UNCONFINED (install bubblewrap, or set"
        " required = true to refuse Bash instead)"
    )


async def run_doctor(args: argparse.Namespace) -> int:
    """Check every provider: exit 4 when a server is unreachable or a check fails (a provider
    error, as the README's table says), 2 when a key is missing or nothing is configured."""
    config = run_config()
    rows: list[dict[str, Any]] = []
    async with httpx2.AsyncClient() as client:
        detected = await detect_loopback(client)
        providers = dict(config.providers)
        if not providers and detected:
            found = detected[0]
            name = f"{found.label} (detected)"
            model = found.models[0] if len(found.models) == 1 else ""
            providers[name] = ProviderConfig(
                name=name, wire="openai-chat", base_url=found.base_url, model=model
            )
        for name in sorted(providers):
            provider = providers[name]
            checks = [await check_models(client, config, provider)]
            if args.probe and provider.model:
                checks.append(await check_probe(client, config, provider))
            else:  # the probe checks the wire with a real request
                checks.append(await check_wire(client, config, provider))
            key = "no key configured"
            if provider.api_key_env is not None:
                key = "set" if config.api_key(provider) else "NOT SET"
            rows.append(
                {
                    "provider": name,
                    "base_url": provider.base_url,
                    "wire": provider.wire,
                    "reachable": checks[0].status.startswith("HTTP"),
                    "ok": all(c.ok for c in checks) and key != "NOT SET",
                    "api_key_env": provider.api_key_env,
                    "api_key": key,
                    "checks": [asdict(c) for c in checks],
                }
            )
    ledger = [asdict(check) for check in check_ledger(config.ledger)]
    ledger_ok = all(check["ok"] for check in ledger)
    healthy = bool(rows) and all(row["ok"] for row in rows) and ledger_ok
    servers = [{"kind": s.kind, "base_url": s.base_url, "models": list(s.models)} for s in detected]
    confined, sandbox = sandbox_state(config)
    if args.json:
        body = {
            "ok": healthy,
            "providers": rows,
            "detected": servers,
            "sandbox": {"confined": confined, "status": sandbox},
            "ledger": ledger,
        }
        print(json.dumps(body, indent=2))
        return 3 if not ledger_ok else _exit_code(rows)
    chosen = config.permissions.mode == "full-access"
    print(f"{'ok ' if confined or chosen else 'BAD'} sandbox: {sandbox}")
    if not rows:
        print("no providers configured, and no model server found on loopback", file=sys.stderr)
    elif not config.providers:
        print("no providers configured: `comal -p` uses the server found on loopback")
    for row in rows:
        env = row["api_key_env"] or "-"
        print(
            f"{'ok ' if row['ok'] else 'BAD'} {row['provider']} ({row['wire']}) key {env}:"
            f" {row['api_key']}"
        )
        for check in row["checks"]:
            mark = "ok " if check["ok"] else "BAD"
            fix = f" — {check['fix']}" if check["fix"] else ""
            print(f"    {mark} {check['what']:<6} {check['url']}  {check['status']}{fix}")
    for server in detected:
        print(f"detected {server.describe()}")
    print(f"{'ok ' if ledger_ok else 'BAD'} ledger")
    for check in ledger:
        mark = "ok " if check["ok"] else "BAD"
        fix = f" — {check['fix']}" if check["fix"] else ""
        print(f"    {mark} {check['what']:<11} {check['status']}{fix}")
    return 3 if not ledger_ok else _exit_code(rows)


def _exit_code(rows: list[dict[str, Any]]) -> int:
    if any(not all(check["ok"] for check in row["checks"]) for row in rows):
        return 4
    return 0 if rows and all(row["ok"] for row in rows) else 2


def register_doctor(subparsers: Any) -> None:
    """Add the `doctor` subcommand."""
    doctor = subparsers.add_parser(
        "doctor",
        help="check each provider (its models endpoint answers, key set, --probe) and the ledger",
    )
    doctor.add_argument("--json", action="store_true", help="print JSON")
    doctor.add_argument(
        "--probe", action="store_true", help="also send a 1-token request to each provider"
    )
    doctor.set_defaults(func=run_doctor)
