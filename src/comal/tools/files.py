"""Read: a file's lines, numbered, by line range; images as media parts.

Invariants: the output is the numbered text exactly as the model sees it (UTF-8). The file is
streamed (`_read_stream`): memory stays bounded whatever its size or its longest line. Text that
is not valid UTF-8 is shown with U+FFFD replacements and a note; a file with NUL bytes in its
first 8 KiB is treated as binary and described (size and digest), never dumped. PNG, JPEG,
GIF and WebP files (recognised by their magic bytes) become a `MediaPart` with base64 data
when they are within the size limit. Long lines are cut with a visible marker, and the footer
says which lines were shown and how to continue.
"""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path

from comal.errors import ToolError
from comal.messages import JSONObject, MediaPart, ToolSpec
from comal.tools._read_stream import digest_file, numbered_lines, read_head
from comal.tools.base import (
    FILE_PATH,
    NoPreparation,
    PathArgument,
    Preparation,
    ToolContext,
    ToolOutcome,
    display_path,
    error_outcome,
    int_arg,
    resolve_path,
    string_arg,
    text_outcome,
)

DEFAULT_LIMIT_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_IMAGE_BYTES = 5 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192

_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)

READ_SPEC = ToolSpec(
    name="Read",
    description=(
        "Read a file. Text comes back with 1-based line numbers (`number<TAB>line`); use "
        "`offset` and `limit` to page through long files. PNG, JPEG, GIF and WebP images are "
        "returned as images. Binary files are described, not dumped. Directories are "
        "rejected: use Glob to list files."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": FILE_PATH,
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "First line to return (1-based). Default 1.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": f"Maximum number of lines. Default {DEFAULT_LIMIT_LINES}.",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
)


def image_media_type(data: bytes) -> str | None:
    """The image media type recognised from `data`'s magic bytes, or None."""
    for magic, media_type in _IMAGE_MAGIC:
        if data.startswith(magic):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


class ReadTool(PathArgument, NoPreparation):
    """The `Read` tool.

    Args:
        default_limit_lines: lines returned when the call gives no `limit`.
        max_line_chars: characters kept per line before it is cut.
        max_image_bytes: larger images are described instead of attached.
    """

    spec = READ_SPEC
    read_only = True

    def __init__(
        self,
        default_limit_lines: int = DEFAULT_LIMIT_LINES,
        max_line_chars: int = MAX_LINE_CHARS,
        max_image_bytes: int = MAX_IMAGE_BYTES,
    ) -> None:
        self.default_limit_lines = default_limit_lines
        self.max_line_chars = max_line_chars
        self.max_image_bytes = max_image_bytes

    async def run(
        self,
        arguments: JSONObject,
        ctx: ToolContext,
        preparation: Preparation | None,  # noqa: ARG002 - nothing to prepare
    ) -> ToolOutcome:
        """Read the file and return numbered lines, an image, or a binary description."""
        try:
            path = string_arg(arguments, "path")
            offset = int_arg(arguments, "offset", 1)
            limit = int_arg(arguments, "limit", self.default_limit_lines)
            if offset < 1 or limit < 1:
                raise ToolError("offset and limit must be at least 1")
            resolved = resolve_path(ctx.workspace, path)
            return await asyncio.to_thread(self._read, resolved, path, offset, limit, ctx)
        except ToolError as exc:
            return error_outcome(exc.message)

    def _read(
        self, resolved: Path, given: str, offset: int, limit: int, ctx: ToolContext
    ) -> ToolOutcome:
        """The outcome, reading the file in bounded memory (`_read_stream`)."""
        shown = display_path(ctx.workspace, resolved)
        if resolved.is_dir():
            raise ToolError(f"{given} is a directory; use Glob to list files")
        try:
            with resolved.open("rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                head = read_head(handle, BINARY_SNIFF_BYTES)
                media_type = image_media_type(head)
                if media_type is not None:
                    if size > self.max_image_bytes:
                        return self._image(shown, media_type, b"", size)
                    return self._image(shown, media_type, read_head(handle, size), size)
                if b"\x00" in head:
                    return text_outcome(
                        f"[binary file: {shown}, {size} bytes, {digest_file(handle)}; not shown]"
                    )
            if not head:
                return text_outcome(f"[empty file: {shown}]")
            found = numbered_lines(resolved, offset, limit, self.max_line_chars)
        except FileNotFoundError as exc:
            raise ToolError(f"{given}: no such file") from exc
        except OSError as exc:
            raise ToolError(f"{given}: cannot read: {exc.strerror or exc}") from exc
        note = (
            ""
            if found.valid_utf8
            else "[file is not valid UTF-8; undecodable bytes shown as \ufffd]\n"
        )
        body, total = found.body, found.total
        if offset > total:
            return error_outcome(f"offset {offset} is past the end of {shown} ({total} lines)")
        last = offset + body.count("\n")
        footer = ""
        if offset > 1 or last < total:
            footer = f"\n[lines {offset}-{last} of {total}"
            footer += f"; continue with offset={last + 1}]" if last < total else "]"
        return text_outcome(f"{note}{body}{footer}")

    def _image(self, shown: str, media_type: str, data: bytes, size: int) -> ToolOutcome:
        if size > self.max_image_bytes:
            return text_outcome(
                f"[image: {shown}, {media_type}, {size} bytes; larger than the "
                f"{self.max_image_bytes}-byte image limit, not attached]"
            )
        media = MediaPart(media_type, base64.b64encode(data).decode("ascii"))
        text = f"[image: {shown}, {media_type}, {len(data)} bytes]"
        return ToolOutcome(text.encode("utf-8", errors="surrogateescape"), media=(media,))
