"""The EvidenceRead tool: the model re-reads recorded outputs exactly, page by page.

Tools may not import the ledger or the context engine, so the tool receives an injected
`EvidenceReader` (the context engine provides one bound to the session's ledger). Reading never
repeats the original effect: it only returns bytes the ledger already holds.
"""

from __future__ import annotations

from typing import Protocol

from comal.errors import EvidenceError
from comal.messages import JSONObject, ToolSpec
from comal.tools.base import (
    NoPreparation,
    Preparation,
    ToolContext,
    ToolOutcome,
    error_outcome,
    text_outcome,
)

EVIDENCE_SPEC = ToolSpec(
    name="EvidenceRead",
    description=(
        "Read a recorded output (or message text, call arguments, media metadata) exactly as"
        " the session ledger keeps it, without running anything again. Use the ref shown in a"
        " `[ref evt_…]` reference or a checkpoint; ref `index` lists every tool result of this"
        " session (ref, tool, main argument, size, digest), oldest first. Offsets and limits"
        " are UTF-16 code units; a page is at most 8000 units. The answer ends with the exact"
        " next call to make (next page or next search hits). `search` finds a literal (or a"
        " regex with `regex: true`) and returns hit offsets. `expected_digest` makes a read"
        " fail if the evidence is not the one you expect."
    ),
    parameters={
        "type": "object",
        "properties": {
            "ref": {
                "type": "string",
                "description": (
                    "Evidence id, e.g. evt_0193…, a session ordinal such as E17 (as a"
                    " checkpoint lists them), or `index` for the list of results."
                ),
            },
            "field": {
                "type": "string",
                "enum": ["output", "text", "arguments", "media"],
                "description": "What to read (default output).",
            },
            "offset": {"type": "integer", "minimum": 0, "description": "Start (UTF-16 units)."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 8000},
            "search": {"type": "string", "description": "Text to find from offset on."},
            "regex": {"type": "boolean", "description": "Treat search as a regex."},
            "expected_digest": {"type": "string", "description": "sha256:… to verify."},
        },
        "required": ["ref"],
        "additionalProperties": False,
    },
)


class EvidenceReader(Protocol):
    """Answers EvidenceRead calls for one session (provided by the context engine)."""

    def read(self, arguments: JSONObject) -> JSONObject:
        """The JSON answer for one call.

        Raises:
            EvidenceError: bad arguments, unknown ref, refused access, digest mismatch.
        """
        ...

    def render(self, arguments: JSONObject) -> str:
        """The model-facing text of the answer (page or hits, then the next call)."""
        ...


class EvidenceReadTool(NoPreparation):
    """`EvidenceRead`: read-only access to the session's (and its children's) evidence."""

    spec = EVIDENCE_SPEC
    read_only = True

    def __init__(self, reader: EvidenceReader) -> None:
        self.reader = reader

    def target(self, arguments: JSONObject) -> str | None:
        """The ref read."""
        ref = arguments.get("ref")
        return ref if isinstance(ref, str) else None

    def paths(self, arguments: JSONObject) -> tuple[str, ...]:  # noqa: ARG002 - protocol
        """EvidenceRead touches no file."""
        return ()

    async def run(
        self,
        arguments: JSONObject,
        ctx: ToolContext,  # noqa: ARG002 - protocol
        preparation: Preparation | None,  # noqa: ARG002 - protocol
    ) -> ToolOutcome:
        """Read the evidence; failures become error results the model can act on."""
        try:
            return text_outcome(self.reader.render(arguments))
        except EvidenceError as exc:
            return error_outcome(str(exc))
