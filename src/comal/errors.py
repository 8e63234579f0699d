"""The ComalError tree: every failure a user can meet has a type, a stable code and a clear message.

Codes are the vocabulary of the spec (CONTEXT_LENGTH, OUTPUT_LENGTH, CONTEXT_OVERHEAD, …) and
appear in JSON output and in ledger entries. Messages never contain secrets.
"""

from __future__ import annotations


class ComalError(Exception):
    """Base of every error Comal raises on purpose."""

    code: str = "ERROR"
    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


# --- provider errors -------------------------------------------------------------------------


class ProviderError(ComalError):
    """A provider call failed. `retryable` tells the transport wrapper whether to retry."""

    code = "PROVIDER_ERROR"
    exit_code = 4
    retryable = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        raw: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.raw = raw


class ContextLengthError(ProviderError):
    """The provider rejected the input as too long for its context window."""

    code = "CONTEXT_LENGTH"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        raw: str | None = None,
        reported_tokens: int | None = None,
        limit_tokens: int | None = None,
        fixable_by_output_reserve: bool = False,
        requested_output_tokens: int | None = None,
    ) -> None:
        super().__init__(message, status=status, raw=raw)
        self.reported_tokens = reported_tokens
        self.limit_tokens = limit_tokens
        self.fixable_by_output_reserve = fixable_by_output_reserve
        self.requested_output_tokens = requested_output_tokens


class OutputLengthError(ProviderError):
    """The response stopped at the output limit before finishing."""

    code = "OUTPUT_LENGTH"


class RateLimitError(ProviderError):
    """HTTP 429 or an equivalent; honours retry-after."""

    code = "RATE_LIMIT"
    retryable = True


class OverloadedError(ProviderError):
    """The provider is overloaded or failing (529, 500, 502, 503, 504)."""

    code = "OVERLOADED"
    retryable = True


class AuthError(ProviderError):
    """Missing or rejected credentials (401, 403)."""

    code = "AUTH"


class NetworkError(ProviderError):
    """Connection failed, timed out, or the stream was cut mid-event."""

    code = "NETWORK"
    retryable = True


class EmptyStreamError(NetworkError):
    """A server answered a streamed request with HTTP 200 and no event at all.

    Not retried: the same request gets the same empty answer; the adapter asks once without
    streaming to learn the real error instead.
    """

    retryable = False


class ResponseDeadlineError(NetworkError):
    """A response did not end within the provider's `response_deadline_s`.

    Not retried: a server that trickles one answer that slowly would trickle the next one too.
    """

    code = "RESPONSE_DEADLINE"
    retryable = False


class RedirectError(ProviderError):
    """The server answered with an HTTP redirect; requests are never sent on elsewhere."""

    code = "REDIRECT"


class MalformedStreamError(ProviderError):
    """A stream that ended without an answer the wire describes (no choices, no finish)."""

    code = "MALFORMED_STREAM"


class InvalidRequestError(ProviderError):
    """The provider rejected the request for another reason (400, 404, 422, malformed replies)."""

    code = "INVALID_REQUEST"


class ScriptExhaustedError(ProviderError):
    """A scripted provider or fake server was asked for more turns than it was given."""

    code = "SCRIPT_EXHAUSTED"


# --- context errors --------------------------------------------------------------------------


class ContextOverheadError(ComalError):
    """Instructions + schemas + output reserve + margin do not fit even before the conversation."""

    code = "CONTEXT_OVERHEAD"
    exit_code = 5


class ContextPressureLoopError(ComalError):
    """Repeated fill/derive cycles without enough saving: stopped, everything resumable."""

    code = "CONTEXT_PRESSURE_LOOP"
    exit_code = 5


class CompactNotSmallerError(ComalError):
    """A manual compaction that would not make the view smaller: refused, nothing derived."""

    code = "COMPACT_NOT_SMALLER"
    exit_code = 5

    def __init__(self, message: str, before_tokens: int, after_tokens: int) -> None:
        super().__init__(message)
        self.before_tokens = before_tokens
        self.after_tokens = after_tokens


class InvariantError(ComalError):
    """A view broke an invariant (orphan call or result, dangling ref, over budget)."""

    code = "INVARIANT"
    exit_code = 70


# --- ledger and session errors ---------------------------------------------------------------


class LedgerError(ComalError):
    """The ledger cannot be used as asked."""

    code = "LEDGER"
    exit_code = 3


class SchemaTooNewError(LedgerError):
    """The ledger was written by a newer Comal; it is refused and never written."""

    code = "LEDGER_SCHEMA_TOO_NEW"


class UnknownSessionError(LedgerError):
    """No session matches the given id or prefix."""

    code = "UNKNOWN_SESSION"


class AmbiguousSessionError(LedgerError):
    """Several sessions match the given prefix."""

    code = "AMBIGUOUS_SESSION"


class SessionLockedError(LedgerError):
    """Another live process holds the session."""

    code = "SESSION_LOCKED"


class UnknownEntryError(LedgerError):
    """No entry has the given id."""

    code = "UNKNOWN_ENTRY"


class DiskFullError(LedgerError):
    """The disk (or the ledger's size limit) is full: nothing more can be recorded."""

    code = "DISK_FULL"


class LedgerUnavailableError(LedgerError):
    """The ledger's server cannot be reached (a dropped connection, a restart) and did not
    come back in time; nothing committed is lost."""

    code = "LEDGER_UNAVAILABLE"


class LedgerDamagedError(LedgerError):
    """The ledger file is damaged: SQLite cannot read part of it, or an entry does not decode."""

    code = "LEDGER_DAMAGED"


SALVAGE_HINT = (
    "run `comal verify` to list the damaged entries, `comal verify --salvage OUT` to copy"
    " every intact one into a new ledger"
)
"""What to do about a damaged ledger, said after every report of one."""


class FileAccessError(ComalError):
    """A file or directory Comal needs cannot be read or written (permissions, read-only)."""

    code = "FILE_ACCESS"
    exit_code = 2


class OutputError(ComalError):
    """Standard output cannot be written (a full disk behind a redirect, a closed pipe)."""

    code = "OUTPUT"
    exit_code = 1


class UnexpectedError(ComalError):
    """A failure Comal does not name more precisely (a bug); one line, never a traceback."""

    code = "UNEXPECTED"
    exit_code = 1


# --- tools, permissions, evidence ------------------------------------------------------------


class ToolError(ComalError):
    """A tool could not run as asked; becomes an error result for the model."""

    code = "TOOL_ERROR"


class PermissionDeniedError(ToolError):
    """The permission policy denied the call."""

    code = "PERMISSION_DENIED"


class PathOutsideWorkspaceError(PermissionDeniedError):
    """A path resolves (symlinks and `..` included) outside the workspace."""

    code = "PATH_OUTSIDE_WORKSPACE"


class EvidenceError(ComalError):
    """An evidence read failed (unknown ref, access refused, digest mismatch, bad range)."""

    code = "EVIDENCE"
    exit_code = 3


class DigestMismatchError(EvidenceError):
    """`expected_digest` does not match the stored evidence."""

    code = "DIGEST_MISMATCH"


class EvidenceAccessError(EvidenceError):
    """The evidence belongs to a session that is neither this one nor a direct child."""

    code = "EVIDENCE_ACCESS_DENIED"


class ConfigError(ComalError):
    """The configuration is invalid or incomplete."""

    code = "CONFIG"
    exit_code = 2


class MissingExtraError(ConfigError):
    """A feature needs an optional dependency the installation left out (`comal[bench]`,
    `comal[chrome]`): said in one line naming the extra, never a traceback."""

    code = "MISSING_EXTRA"


def missing_extra(module: str, extra: str, feature: str) -> MissingExtraError:
    """The error for `feature` when `module`, installed by the `extra`, cannot be imported."""
    return MissingExtraError(
        f"{feature} needs {module}, which is not installed: pip install 'comal[{extra}]'"
    )


class ImportFormatError(ComalError):
    """A recorded session cannot be imported; names the file and line."""

    code = "IMPORT_FORMAT"
    exit_code = 2


class StepLimitError(ComalError):
    """The turn used all of `max_turns` model calls."""

    code = "MAX_TURNS"
    exit_code = 6


class BudgetError(ComalError):
    """A child session used its whole token budget (`max_tokens` of its task)."""

    code = "BUDGET_EXHAUSTED"
    exit_code = 6


class RewindError(ComalError):
    """A rewind or fork that cannot be done as asked: an unknown point, or files changed
    outside the session since its last change (refused unless forced)."""

    code = "REWIND_REFUSED"
    exit_code = 3


class HookBlockedError(ComalError):
    """A hook (exit code 2) blocked the user's prompt; it was not sent to the model."""

    code = "HOOK_BLOCKED"
    exit_code = 2


class RefusedError(ComalError):
    """The model declined the task: a refusal the wire marked as such, never an empty answer."""

    code = "REFUSED"
    exit_code = 7

    def __init__(self, text: str, reason: str) -> None:
        super().__init__(f"the model refused: {reason or text or '(no reason given)'}")
        self.text = text
        self.reason = reason
