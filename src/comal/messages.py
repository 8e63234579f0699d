"""Conversation values shared by every layer: messages, parts, tool specs, JSON types.

A conversation is a tuple of `Message`s alternating between the `user` and `assistant` roles.
Tool results travel in user messages (the Anthropic shape); adapters for wires that want a
separate `tool` role split them out when encoding. Everything here is a pure value: no I/O,
no clock, and `message_to_json` / `message_from_json` round-trip exactly, so the ledger can
store a message and a later projection can rebuild byte-identical requests from it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import field
from enum import StrEnum
from typing import Literal, TypeAlias, cast

from comal.values import value

JSONValue: TypeAlias = "bool | int | float | str | list[JSONValue] | dict[str, JSONValue] | None"
JSONObject: TypeAlias = dict[str, JSONValue]

Role = Literal["user", "assistant"]


class Finish(StrEnum):
    """Why a model stopped, the same on every wire; the values are what the ledger records."""

    STOP = "stop"
    TOOL_CALLS = "tool_calls"
    LENGTH = "length"
    """OUTPUT_LENGTH: the reply was cut at the output limit (every wire's own word maps here)."""
    CONTEXT_WINDOW_EXCEEDED = "context_window_exceeded"
    """Generation stopped because the window filled (Anthropic `model_context_window_exceeded`)."""
    CONTENT_FILTER = "content_filter"
    REFUSAL = "refusal"
    PAUSE = "pause"
    UNKNOWN = "unknown"


@value
class TextPart:
    """Plain text from the user or the assistant."""

    text: str


@value
class ReasoningPart:
    """Provider reasoning kept verbatim; replayed only to the same wire and model.

    Anthropic `thinking` (text + signature) and `redacted_thinking` (data), OpenAI Responses
    reasoning items (id + encrypted content + summary text), and Chat `reasoning_content`.
    """

    wire: str
    model: str
    text: str = ""
    signature: str | None = None
    redacted_data: str | None = None
    encrypted_content: str | None = None
    item_id: str | None = None


@value
class InvalidArguments:
    """Arguments a model sent for a call that are not a JSON object: kept, never executed."""

    raw_arguments: str
    """The argument text exactly as it arrived."""
    error: str
    """Why it is not a JSON object (the parser's message)."""


@value
class ToolCallPart:
    """A complete tool call: provider id verbatim, parsed JSON arguments.

    A call whose arguments did not parse keeps its place in the message (stream order) with
    empty `arguments` and `invalid` set: it is answered with an error result, never run.
    """

    call_id: str
    name: str
    arguments: JSONObject = field(default_factory=dict)
    invalid: InvalidArguments | None = None


@value
class MediaPart:
    """An image (or other media) by value (base64) and, when stored, by evidence reference."""

    media_type: str
    data_b64: str
    ref: str | None = None


@value
class ToolResultPart:
    """The result the model sees for one call; `content` may be a projected reference."""

    call_id: str
    name: str
    content: str
    is_error: bool = False
    media: tuple[MediaPart, ...] = ()


Part: TypeAlias = TextPart | ReasoningPart | ToolCallPart | ToolResultPart | MediaPart


@value
class Message:
    """One conversational turn."""

    role: Role
    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        """The concatenated text parts."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        """Tool calls in order."""
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))

    @property
    def tool_results(self) -> tuple[ToolResultPart, ...]:
        """Tool results in order."""
        return tuple(p for p in self.parts if isinstance(p, ToolResultPart))


@value
class ToolSpec:
    """A tool offered to the model: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: JSONObject


def user_text(text: str) -> Message:
    """A user message holding only text."""
    return Message("user", (TextPart(text),))


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)
"""The encoder `json.dumps` would build for these options on every call (it keeps no state
between calls): a session's every append and every work-state fold encode with it."""


def canonical_json(value: JSONValue) -> str:
    """Canonical JSON: sorted keys, no spaces, ASCII-escaped.

    ASCII escaping keeps lone surrogates (from invalid UTF-8 decoded with `surrogateescape`)
    representable, so any Python string round-trips.
    """
    return _CANONICAL.encode(value)


def digest_bytes(data: bytes) -> str:
    """The content digest used everywhere: `sha256:<hex>`."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def render_output_text(data: bytes) -> str:
    """Safe text for raw tool output bytes.

    Valid UTF-8 is returned as is. Anything else is decoded with U+FFFD replacements and
    prefixed by a note, so the model never receives undecodable bytes while the ledger keeps
    the exact ones.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        note = f"[output is not valid UTF-8: {len(data)} bytes; undecodable bytes shown as \ufffd]"
        return f"{note}\n{text}"


def _part_to_json(part: Part) -> JSONObject:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ReasoningPart):
        return {
            "type": "reasoning",
            "wire": part.wire,
            "model": part.model,
            "text": part.text,
            "signature": part.signature,
            "redacted_data": part.redacted_data,
            "encrypted_content": part.encrypted_content,
            "item_id": part.item_id,
        }
    if isinstance(part, ToolCallPart):
        out: JSONObject = {
            "type": "tool_call",
            "call_id": part.call_id,
            "name": part.name,
            "arguments": part.arguments,
        }
        if part.invalid is not None:
            # Only when set, so every valid call serializes as it always has.
            out["invalid"] = {
                "raw_arguments": part.invalid.raw_arguments,
                "error": part.invalid.error,
            }
        return out
    if isinstance(part, ToolResultPart):
        return {
            "type": "tool_result",
            "call_id": part.call_id,
            "name": part.name,
            "content": part.content,
            "is_error": part.is_error,
            "media": [_part_to_json(m) for m in part.media],
        }
    return {
        "type": "media",
        "media_type": part.media_type,
        "data_b64": part.data_b64,
        "ref": part.ref,
    }


def _opt_str(obj: Mapping[str, JSONValue], key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) else None


def _part_from_json(obj: Mapping[str, JSONValue]) -> Part:
    kind = obj.get("type")
    if kind == "text":
        return TextPart(str(obj["text"]))
    if kind == "reasoning":
        return ReasoningPart(
            wire=str(obj["wire"]),
            model=str(obj["model"]),
            text=str(obj.get("text") or ""),
            signature=_opt_str(obj, "signature"),
            redacted_data=_opt_str(obj, "redacted_data"),
            encrypted_content=_opt_str(obj, "encrypted_content"),
            item_id=_opt_str(obj, "item_id"),
        )
    if kind == "tool_call":
        args = obj.get("arguments")
        bad = obj.get("invalid")
        invalid = (
            InvalidArguments(str(bad.get("raw_arguments", "")), str(bad.get("error", "")))
            if isinstance(bad, dict)
            else None
        )
        return ToolCallPart(
            str(obj["call_id"]),
            str(obj["name"]),
            args if isinstance(args, dict) else {},
            invalid,
        )
    if kind == "tool_result":
        media = obj.get("media")
        parts = tuple(
            _media_from_json(cast(Mapping[str, JSONValue], m))
            for m in (media if isinstance(media, list) else [])
        )
        return ToolResultPart(
            call_id=str(obj["call_id"]),
            name=str(obj["name"]),
            content=str(obj["content"]),
            is_error=bool(obj.get("is_error")),
            media=parts,
        )
    if kind == "media":
        return _media_from_json(obj)
    raise ValueError(f"unknown message part type: {kind!r}")


def _media_from_json(obj: Mapping[str, JSONValue]) -> MediaPart:
    return MediaPart(str(obj["media_type"]), str(obj["data_b64"]), _opt_str(obj, "ref"))


def message_to_json(message: Message) -> JSONObject:
    """Serialize a message to a JSON object (exact inverse of `message_from_json`)."""
    return {"role": message.role, "parts": [_part_to_json(p) for p in message.parts]}


def message_from_json(obj: Mapping[str, JSONValue]) -> Message:
    """Rebuild a message from `message_to_json` output.

    Raises:
        ValueError: the object is not a serialized message.
    """
    role = obj.get("role")
    parts = obj.get("parts")
    if role not in ("user", "assistant") or not isinstance(parts, list):
        raise ValueError("not a serialized message")
    # A list made first, then the tuple: a generator costs more for the few parts of a message.
    made = [_part_from_json(cast(Mapping[str, JSONValue], p)) for p in parts]
    return Message(cast(Role, role), tuple(made))
