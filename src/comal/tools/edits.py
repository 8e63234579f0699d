"""Write and Edit: file changes with a durable preparation and a recovery adapter.

Invariants:
- `prepare` reads the file and computes `digest_before` and `digest_intended` without touching
  it; an Edit that cannot apply (no match, ambiguous match) fails here, before the loop records
  anything durable.
- `run` writes only if the file still has `digest_before` ("file changed since preparation"
  otherwise) and only the bytes whose digest is `digest_intended`. The write is atomic: a
  temporary file in the same directory, fsync, `os.replace`, then fsync of the directory, so a
  crash leaves either the old or the new content, never a torn file. An existing file keeps
  its permission bits; a new file gets the default mode (umask applied).
- Reads and writes never follow the path string again after the check: every folder is
  opened from the workspace's handle with `O_NOFOLLOW` (`tools/dirfd.py`), so a folder swapped
  for a symlink meanwhile is refused, never followed outside the workspace.
- Several edits in one Edit call apply in order to the in-memory text and land together or not
  at all. Text is decoded with `surrogateescape`, so bytes that are not UTF-8 survive an edit
  unchanged.
- `observe` (the recovery adapter) compares a fresh read with `digest_intended`; a read the
  current permissions refuse stays unreadable, so recovery keeps the call uncertain.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from comal.errors import ToolError
from comal.messages import JSONObject, ToolSpec, digest_bytes
from comal.tools.base import (
    FILE_PATH,
    Observation,
    PathArgument,
    Preparation,
    ToolContext,
    ToolOutcome,
    display_path,
    error_outcome,
    resolve_path,
    string_arg,
    text_outcome,
)
from comal.tools.dirfd import parent_handle, read_in, replace_in
from comal.tools.files import ReadTool

WRITE_SPEC = ToolSpec(
    name="Write",
    description=(
        "Create or overwrite a file with `content` (parent directories are created). Prefer "
        "Edit for changing part of an existing file."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": FILE_PATH,
            "content": {"type": "string", "description": "The complete new file content."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
)

EDIT_SPEC = ToolSpec(
    name="Edit",
    description=(
        "Replace exact text in an existing file. Each edit's `old_string` must match the "
        "file exactly (whitespace included) and exactly once, unless `replace_all` is true; "
        "include surrounding lines to make it unique. Edits apply in order, each to the "
        "result of the previous one, and all succeed or none is written."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": FILE_PATH,
            "edits": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "old_string": {"type": "string", "description": "Exact text to find."},
                        "new_string": {"type": "string", "description": "Replacement text."},
                        "replace_all": {
                            "type": "boolean",
                            "description": "Replace every occurrence. Default false.",
                        },
                    },
                    "required": ["old_string", "new_string"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["path", "edits"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True, slots=True)
class _Change:
    """A computed change: what is there now and what will be written."""

    resolved: Path
    before: bytes | None
    after: bytes
    summary: str


class _FileChangeTool(PathArgument):
    """Shared preparation, guarded atomic write and recovery for Write and Edit."""

    spec: ToolSpec
    read_only = False

    def _intended(
        self, arguments: JSONObject, before: bytes | None, shown: str
    ) -> tuple[bytes, str]:
        """The bytes to write and a one-line summary of the change."""
        raise NotImplementedError

    async def _change(
        self, arguments: JSONObject, ctx: ToolContext, prepared: Preparation | None = None
    ) -> _Change:
        path = string_arg(arguments, "path")
        # Run acts on the path prepared (and recorded), never on a fresh resolution: a folder
        # swapped for a symlink since would resolve elsewhere.
        resolved = (
            Path(prepared.abs_path) if prepared is not None else resolve_path(ctx.workspace, path)
        )
        before = await asyncio.to_thread(_read_current, ctx.workspace, resolved)
        after, summary = self._intended(arguments, before, display_path(ctx.workspace, resolved))
        return _Change(resolved, before, after, summary)

    async def prepare(self, arguments: JSONObject, ctx: ToolContext) -> Preparation:
        """Compute digests before and intended; the file is not touched.

        Raises:
            ToolError: the file cannot be read, or the change cannot apply.
        """
        change = await self._change(arguments, ctx)
        before = None if change.before is None else digest_bytes(change.before)
        path = string_arg(arguments, "path")
        return Preparation(
            path, str(change.resolved), before, digest_bytes(change.after), before=change.before
        )

    async def run(
        self, arguments: JSONObject, ctx: ToolContext, preparation: Preparation | None
    ) -> ToolOutcome:
        """Write the intended bytes if the file is still as prepared."""
        try:
            change = await self._change(arguments, ctx, preparation)
            if preparation is not None:
                _check_prepared(preparation, change)
            if change.before != change.after:
                await asyncio.to_thread(_write, ctx.workspace, change.resolved, change.after)
        except ToolError as exc:
            return error_outcome(exc.message)
        return text_outcome(change.summary)

    def observe(self, preparation: Preparation, ctx: ToolContext) -> Observation:
        """Read the prepared file now and compare it with the intended digest."""
        decision = ctx.permissions.decide(ReadTool(), {"path": preparation.abs_path})
        if not decision.allowed:
            return Observation(False, None, False, f"read not allowed: {decision.reason}")
        try:
            data = Path(preparation.abs_path).read_bytes()
        except FileNotFoundError:
            return Observation(False, None, True, "file is absent")
        except OSError as exc:
            return Observation(False, None, False, f"cannot read: {exc.strerror or exc}")
        current = digest_bytes(data)
        if current == preparation.digest_intended:
            return Observation(True, current, True, "file holds the intended content")
        if current == preparation.digest_before:
            return Observation(False, current, True, "file still holds the content before")
        return Observation(False, current, True, "file holds different content")


class WriteTool(_FileChangeTool):
    """The `Write` tool."""

    spec = WRITE_SPEC

    def _intended(
        self, arguments: JSONObject, before: bytes | None, shown: str
    ) -> tuple[bytes, str]:
        content = string_arg(arguments, "content")
        try:
            after = content.encode("utf-8", errors="surrogateescape")
        except UnicodeEncodeError as exc:
            raise ToolError(f"content for {shown} is not encodable as UTF-8: {exc}") from exc
        if before is None:
            summary = f"Wrote {len(after)} bytes to {shown} (new file)"
        elif before == after:
            summary = f"{shown} already holds these {len(after)} bytes (unchanged)"
        else:
            summary = f"Wrote {len(after)} bytes to {shown} (was {len(before)} bytes)"
        return after, summary


class EditTool(_FileChangeTool):
    """The `Edit` tool."""

    spec = EDIT_SPEC

    def _intended(
        self, arguments: JSONObject, before: bytes | None, shown: str
    ) -> tuple[bytes, str]:
        if before is None:
            raise ToolError(f"{shown}: no such file (use Write to create it)")
        edits = arguments.get("edits")
        if not isinstance(edits, list) or not edits:
            raise ToolError("edits must be a non-empty list")
        text = before.decode("utf-8", errors="surrogateescape")
        replacements = 0
        for number, edit in enumerate(edits, start=1):
            label = f"edit {number} of {len(edits)}" if len(edits) > 1 else "edit"
            if not isinstance(edit, dict):
                raise ToolError(f"{label}: must be an object")
            old, new = string_arg(edit, "old_string"), string_arg(edit, "new_string")
            replace_all = edit.get("replace_all", False) is True
            if not old:
                raise ToolError(f"{label}: old_string is empty")
            if old == new:
                raise ToolError(f"{label}: old_string and new_string are identical")
            count = text.count(old)
            if count == 0:
                raise ToolError(f"{label}: old_string not found in {shown}; nothing written")
            if count > 1 and not replace_all:
                raise ToolError(
                    f"{label}: old_string occurs {count} times in {shown}; add surrounding "
                    "context to make it unique, or set replace_all; nothing written"
                )
            text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
            replacements += count if replace_all else 1
        try:
            after = text.encode("utf-8", errors="surrogateescape")
        except UnicodeEncodeError as exc:
            raise ToolError(f"edited text for {shown} is not encodable: {exc}") from exc
        summary = (
            f"Edited {shown}: {len(edits)} edit(s), {replacements} replacement(s); "
            f"{len(before)} -> {len(after)} bytes"
        )
        return after, summary


def _check_prepared(preparation: Preparation, change: _Change) -> None:
    current = None if change.before is None else digest_bytes(change.before)
    if current != preparation.digest_before:
        raise ToolError(
            f"file changed since preparation: {preparation.path} is {current or 'absent'}, "
            f"prepared against {preparation.digest_before or 'absent'}; nothing written"
        )
    if digest_bytes(change.after) != preparation.digest_intended:
        raise ToolError(
            f"arguments do not match the preparation for {preparation.path}; nothing written"
        )


def _read_current(workspace: Path, resolved: Path) -> bytes | None:
    with parent_handle(workspace, resolved, create=False) as parent:
        return read_in(parent, resolved)


def _write(workspace: Path, resolved: Path, data: bytes) -> None:
    with parent_handle(workspace, resolved, create=True) as parent:
        assert parent is not None  # create=True makes every folder
        replace_in(parent, resolved, data)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically and durably."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o7777 if path.exists() else None
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.comal-tmp"
        # O_EXCL on a random name: never clobbers another file; 0o666 lets the umask apply.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise ToolError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            tmp.chmod(mode)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ToolError(f"cannot write {path}: {exc.strerror or exc}") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    # The rename is durable only once the directory entry is flushed.
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
