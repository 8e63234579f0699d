"""`ChromePublish`: Deploy (serve a folder on loopback, or run the remote publish command) + Open.

`prepare` works out the intent without touching anything: the folder's per-file digests, the
target, the ports and the exact URL of the governed tab (its fragment carries a token made
from the manifest and the port, which is the tab's identity). The runner records it in
`tool.started` before `run` acts. `run` then deploys, checks that what is served has the
intended digests, opens (or finds) the governed tab, and returns a snapshot: final URL, title,
DOM digest and a screenshot stored with the result as media evidence.

A remote target is published by the configured command (`[plugins.chrome.remote] command`),
which gets the folder in `COMAL_PUBLISH_DIR` and must print a receipt as its last stdout line:
`{"url": …, "files": {path: digest}, "identity": …}`. Without a complete receipt (every
intended digest, and a deployment identity) the publication stays blocked and nothing is
opened.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping

import comal.plugins.chrome._browser as br
from comal.errors import ToolError
from comal.messages import JSONObject, JSONValue, MediaPart, ToolSpec
from comal.plugins.chrome._task import TaskNotes, TaskStore, manifest, manifest_digest
from comal.tools.base import (
    Preparation,
    ToolContext,
    ToolOutcome,
    display_path,
    error_outcome,
    resolve_path,
    string_arg,
)

PUBLISH_SPEC = ToolSpec(
    name="ChromePublish",
    description=(
        "Publish a workspace folder and open it in the governed Chrome tab. Deploy serves "
        "`folder` on a loopback port (target `loopback`, the default) or runs the configured "
        "publish command (target `remote`); Open navigates the governed tab to `page`. The "
        "intent (per-file digests, target, URL) is recorded before acting; the result is a "
        "snapshot (final URL, title, DOM digest, screenshot). `ready` is an optional "
        "JavaScript expression to wait for before the snapshot."
    ),
    parameters={
        "type": "object",
        "properties": {
            "folder": {"type": "string", "description": "Folder to publish, in the workspace."},
            "page": {"type": "string", "description": "Page to open (default index.html)."},
            "target": {"type": "string", "enum": ["loopback", "remote"]},
            "ready": {"type": "string", "description": "JS expression to wait for."},
        },
        "required": ["folder"],
        "additionalProperties": False,
    },
)

READY_TIMEOUT_S = 60.0


def served_digests(base_url: str, files: Mapping[str, JSONValue]) -> dict[str, str | None]:
    """What `base_url` serves now for each intended file (None: not served)."""
    out: dict[str, str | None] = {}
    for rel in files:
        body = br.fetch(f"{base_url.rstrip('/')}/{rel}")
        out[rel] = None if body is None else br.digest(body)
    return out


def mismatches(files: Mapping[str, JSONValue], served: Mapping[str, str | None]) -> list[str]:
    """Intended files whose served digest differs (or that are not served)."""
    return [rel for rel, want in files.items() if served.get(rel) != want]


def snapshot_json(snap: br.Snapshot) -> JSONObject:
    """A snapshot as recorded (the screenshot itself travels as media)."""
    return {
        "final_url": snap.final_url,
        "title": snap.title,
        "dom_digest": snap.dom_digest,
        "screenshot_digest": br.digest(snap.screenshot),
        "screenshot_bytes": len(snap.screenshot),
    }


def snapshot_outcome(text: str, snap: br.Snapshot, observed: JSONObject) -> ToolOutcome:
    """An ok outcome carrying the snapshot's screenshot as media."""
    data = br.b64(snap.screenshot)
    return ToolOutcome(
        text.encode("utf-8"), media=(MediaPart("image/png", data),), observed=observed
    )


class ChromePublishTool:
    """The ChromePublish tool (see module docstring).

    Args:
        store: the governed task's notes.
        executable: the Chromium binary (`/usr/bin/chromium`).
        remote_command: the remote publish command (argv), or None.
    """

    spec = PUBLISH_SPEC
    read_only = False

    def __init__(self, store: TaskStore, executable: str, remote_command: list[str] | None):
        self.store = store
        self.executable = executable
        self.remote_command = remote_command

    def target(self, arguments: JSONObject) -> str | None:
        """Permission rules match on the folder."""
        value = arguments.get("folder")
        return value if isinstance(value, str) else None

    def paths(self, arguments: JSONObject) -> tuple[str, ...]:
        """The folder, checked against the workspace like any path."""
        value = self.target(arguments)
        return () if value is None else (value,)

    async def prepare(self, arguments: JSONObject, ctx: ToolContext) -> Preparation | None:
        """The intent: digests, target, ports and URL (nothing is started here)."""
        folder = resolve_path(ctx.workspace, string_arg(arguments, "folder"))
        page = string_arg(arguments, "page", "index.html").lstrip("/")
        target = string_arg(arguments, "target", "loopback")
        files = manifest(folder)
        if page not in files:
            raise ToolError(f"{page} is not a file of {display_path(ctx.workspace, folder)}")
        whole = manifest_digest(files)
        intent: JSONObject = {
            "plugin": "chrome",
            "target": target,
            "folder": str(folder),
            "page": page,
            "files": dict(files),
            "ready": arguments.get("ready"),
        }
        if target == "remote":
            if not self.remote_command:
                raise ToolError(
                    "no remote publish command is configured: set [plugins.chrome.remote] "
                    'command = ["…"] (it prints a receipt {url, files, identity})'
                )
            intent["command"] = list(self.remote_command)
        else:
            notes = self.store.load()
            reuse = notes.folder == str(folder) and notes.server_port is not None
            port = notes.server_port if reuse and notes.server_port else br.free_port()
            alive = notes.cdp_port is not None and br.cdp_alive(notes.cdp_port)
            cdp = notes.cdp_port if alive and notes.cdp_port else br.free_port()
            token = br.digest(f"{whole}:{port}".encode())[7:23]
            intent["server_port"] = port
            intent["cdp_port"] = cdp
            intent["url"] = f"http://127.0.0.1:{port}/{page}#comal-tab={token}"
        rel = display_path(ctx.workspace, folder)
        return Preparation(rel, str(folder), None, whole, intent=intent)

    async def run(
        self,
        arguments: JSONObject,  # noqa: ARG002 - the intent holds them, as recorded
        ctx: ToolContext,
        preparation: Preparation | None,
    ) -> ToolOutcome:
        """Deploy, verify what is served, open the governed tab, snapshot."""
        intent = preparation.intent if preparation is not None else None
        if intent is None:
            return error_outcome("ChromePublish needs its recorded intent")
        try:
            if intent.get("target") == "remote":
                return await self._remote(intent, ctx)
            return await self._loopback(intent)
        except ToolError as exc:
            return error_outcome(exc.message)

    def _deploy(self, folder: str, port: int) -> bool:
        """Start the server for `folder` on `port` unless it already serves; True if started."""
        if br.fetch(f"http://127.0.0.1:{port}/") is not None:
            return False
        command = [sys.executable, "-m", "comal.plugins.chrome._serve", "--dir", folder]
        command += ["--port", str(port), "--pid-file", str(self.store.pid_file("server", port))]
        command += ["--deploy-log", str(self.store.deploy_log)]
        br.spawn_detached(command)
        if not br.wait_until(lambda: br.fetch(f"http://127.0.0.1:{port}/") is not None, 30):
            raise ToolError(f"the loopback server for {folder} did not answer on port {port}")
        return True

    async def _launch(self, cdp: int) -> None:
        """Start the task's own browser on CDP port `cdp` (off the event loop)."""
        await asyncio.to_thread(
            br.launch_browser,
            self.executable,
            cdp,
            self.store.profile(cdp),
            self.store.pid_file("browser", cdp),
        )

    async def _loopback(self, intent: JSONObject) -> ToolOutcome:
        folder, url = str(intent["folder"]), str(intent["url"])
        port, cdp = int(str(intent["server_port"])), int(str(intent["cdp_port"]))
        files = intent["files"]
        assert isinstance(files, dict)
        deployed = await asyncio.to_thread(self._deploy, folder, port)
        self.store.save(TaskNotes(folder, port, self.store.load().cdp_port, None))
        served = served_digests(f"http://127.0.0.1:{port}", files)
        bad = mismatches(files, served)
        if bad:
            return error_outcome(
                "blocked: the loopback server does not serve the intended bytes for "
                f"{', '.join(bad)}; nothing was opened"
            )
        if not br.cdp_alive(cdp):
            await self._launch(cdp)
        async with br.connected(cdp) as browser:
            page = br.find_tab(browser, url)
            opened = page is None
            if page is None:
                page = await br.open_tab(browser, url)
            self.store.save(TaskNotes(folder, port, cdp, url))
            ready = intent.get("ready")
            wait = ready if isinstance(ready, str) else None
            if not await br.wait_ready(page, wait, READY_TIMEOUT_S):
                return error_outcome(
                    f"the page never became ready ({ready}) within {READY_TIMEOUT_S:.0f} s"
                )
            snap = await br.snapshot(page)
        observed: JSONObject = {
            "target": "loopback",
            "deployed": deployed,
            "opened": opened,
            "url": url,
            "served": dict(served),
            **snapshot_json(snap),
        }
        text = (
            f"Deploy: {'started a loopback server' if deployed else 'already served'} for "
            f"{folder} on port {port}; every intended file is served with its digest.\n"
            f"Open: {'opened' if opened else 'found'} the governed tab {url}.\n"
            f"Snapshot: final URL {snap.final_url} · title {snap.title!r} · DOM "
            f"{snap.dom_digest} · screenshot {len(snap.screenshot):,} bytes (media of this "
            "result)."
        )
        return snapshot_outcome(text, snap, observed)

    async def _remote(self, intent: JSONObject, ctx: ToolContext) -> ToolOutcome:
        raw = intent.get("command")
        command = [str(c) for c in raw] if isinstance(raw, list) else []
        env = {**ctx.env, "COMAL_PUBLISH_DIR": str(intent["folder"])}
        proc = await asyncio.create_subprocess_exec(
            *command,
            cwd=ctx.workspace,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout=300)
        lines = [line for line in out.decode("utf-8", "replace").splitlines() if line.strip()]
        receipt: JSONValue = None
        if lines:
            try:
                receipt = json.loads(lines[-1])
            except ValueError:
                receipt = None
        files = intent["files"]
        assert isinstance(files, dict)
        needs = receipt_needs(receipt, files)
        if proc.returncode != 0 or needs:
            why = f"exit {proc.returncode}" if proc.returncode != 0 else "; ".join(needs)
            return ToolOutcome(
                (
                    f"blocked: the remote publication has no complete receipt ({why}). It "
                    "would need a receipt naming the URL, every intended file's digest and a "
                    "deployment identity; nothing was opened.\n"
                    + err.decode("utf-8", "replace")[-2000:]
                ).encode(),
                is_error=True,
                status="error",
                observed={
                    "target": "remote",
                    "blocked": True,
                    "needs": list(needs),
                    "receipt": receipt,
                },
            )
        assert isinstance(receipt, dict)
        url = str(receipt["url"])
        base = url.rsplit("/", 1)[0]
        served = served_digests(base, files)
        bad = mismatches(files, served)
        if bad:
            return error_outcome(
                f"blocked: {base} does not serve the intended bytes for {', '.join(bad)} "
                f"(receipt identity {receipt['identity']}); nothing was opened"
            )
        return await self._open(intent, f"{url}#comal-tab={receipt['identity']}", receipt)

    async def _open(self, intent: JSONObject, url: str, receipt: JSONObject) -> ToolOutcome:
        """Open the governed tab on a remote publication whose receipt is complete."""
        notes = self.store.load()
        cdp = notes.cdp_port if notes.cdp_port and br.cdp_alive(notes.cdp_port) else None
        if cdp is None:
            cdp = br.free_port()
            await self._launch(cdp)
        async with br.connected(cdp) as browser:
            page = br.find_tab(browser, url) or await br.open_tab(browser, url)
            self.store.save(TaskNotes(str(intent["folder"]), None, cdp, url, "remote"))
            snap = await br.snapshot(page)
        observed: JSONObject = {"target": "remote", "url": url, "receipt": receipt}
        observed.update(snapshot_json(snap))
        text = (
            f"Deploy: the remote publish command returned a complete receipt (identity "
            f"{receipt['identity']}).\nOpen: the governed tab {url}.\nSnapshot: final URL "
            f"{snap.final_url} · title {snap.title!r} · DOM {snap.dom_digest}."
        )
        return snapshot_outcome(text, snap, observed)


def receipt_needs(receipt: JSONValue, files: Mapping[str, JSONValue]) -> list[str]:
    """What a remote receipt lacks to count as complete (empty: complete)."""
    if not isinstance(receipt, dict):
        return ["a receipt (the command printed no JSON object)"]
    needs = []
    if not isinstance(receipt.get("url"), str) or not receipt.get("url"):
        needs.append("the published URL")
    if not isinstance(receipt.get("identity"), str) or not receipt.get("identity"):
        needs.append("a deployment identity")
    got = receipt.get("files")
    got_files = got if isinstance(got, dict) else {}
    missing = [rel for rel, want in files.items() if got_files.get(rel) != want]
    if missing:
        needs.append("matching digests for " + ", ".join(missing))
    return needs
