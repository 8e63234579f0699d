"""Error answers of the fake server, in each wire's real body shapes (research tech.md §3).

Overflow bodies reproduce the recorded provider texts: OpenAI `context_length_exceeded`, the
Responses "input exceeds the context window", Anthropic "prompt is too long" and "input length
and `max_tokens` exceed context limit", and on the Chat endpoint the vLLM, llama.cpp, DeepSeek
and Gemini variants. A 401 echoes the key the client sent (as some providers partly do) so
tests can prove Comal scrubs it from its errors.
"""

from __future__ import annotations

from comal.messages import JSONObject
from comal.testing.fake_render import ErrorAnswer, SseItem, dump_json


def _openai(message: str, etype: str, code: str | None, param: str | None = None) -> JSONObject:
    return {"error": {"message": message, "type": etype, "param": param, "code": code}}


def _anthropic(etype: str, message: str) -> JSONObject:
    return {"type": "error", "error": {"type": etype, "message": message}, "request_id": "req_fake"}


def _chat_overflow(form: str, tokens: int, window: int, output: int) -> JSONObject:
    if form == "vllm":
        return {
            "object": "error",
            "message": (
                f"This model's maximum context length is {window} tokens. However, you requested"
                f" {tokens + output} tokens ({tokens} in the messages, {output} in the"
                " completion). Please reduce the length of the messages or completion."
            ),
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        }
    if form == "vllm_plus":
        return _openai(
            f"This model's maximum context length is {window} tokens. However, your request has"
            f" {tokens} input tokens plus {output} 'max_tokens'. Please reduce one or the other."
            f" (parameter=input_tokens, max_tokens, value=({tokens}, {output}))",
            "BadRequestError",
            None,
            "input_tokens, max_tokens",
        )
    if form == "vllm_too_large":
        return _openai(
            f"'max_tokens' or 'max_completion_tokens' is too large: {output}. This model's"
            f" maximum context length is {window} tokens and your request has {tokens} input"
            f" tokens ({output} > {window} - {tokens}).",
            "BadRequestError",
            None,
        )
    if form == "llamacpp":
        return {
            "error": {
                "code": 400,
                "message": (
                    f"request ({tokens} tokens) exceeds the available context size ({window}"
                    " tokens), try increasing it"
                ),
                "type": "exceed_context_size_error",
                "n_prompt_tokens": tokens,
                "n_ctx": window,
            }
        }
    if form == "deepseek":
        return _openai(
            f"This model's maximum context length is {window} tokens. However, you requested"
            f" {tokens + output} tokens ({tokens} in the messages, {output} in the completion)."
            " Please reduce the length of the messages or completion.",
            "invalid_request_error",
            "invalid_request_error",
        )
    if form == "gemini":
        return {
            "error": {
                "code": 400,
                "message": (
                    f"The input token count ({tokens}) exceeds the maximum number of tokens"
                    f" allowed ({window})."
                ),
                "status": "INVALID_ARGUMENT",
            }
        }
    return _openai(
        f"This model's maximum context length is {window} tokens. However, your messages"
        f" resulted in {tokens} tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        "context_length_exceeded",
        "messages",
    )


def error_answer(
    wire: str,
    kind: str,
    *,
    form: str | None = None,
    tokens: int = 0,
    window: int = 0,
    output: int = 0,
    retry_after: float | None = None,
    key_seen: str = "",
) -> ErrorAnswer:
    """The HTTP answer for an error kind on a wire (see `fake_script.ERROR_KINDS`)."""
    anthropic = wire == "anthropic-messages"
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    if kind in ("context_length", "context_length_output"):
        if anthropic and kind == "context_length_output":
            return ErrorAnswer(
                400,
                _anthropic(
                    "invalid_request_error",
                    f"input length and `max_tokens` exceed context limit: {tokens} + {output} >"
                    f" {window}, decrease input length or `max_tokens` and try again",
                ),
            )
        if anthropic:
            return ErrorAnswer(
                400,
                _anthropic(
                    "invalid_request_error",
                    f"prompt is too long: {tokens} tokens > {window} maximum",
                ),
            )
        if wire == "openai-responses":
            return ErrorAnswer(
                400,
                _openai(
                    "Your input exceeds the context window of this model. Please adjust your input"
                    " and try again.",
                    "invalid_request_error",
                    "context_length_exceeded",
                    "input",
                ),
            )
        chosen = form or ("vllm_plus" if kind == "context_length_output" else "openai")
        return ErrorAnswer(400, _chat_overflow(chosen, tokens, window, output))
    if kind == "rate_limit":
        body = (
            _anthropic(
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
            )
            if anthropic
            else _openai(
                "Rate limit reached for requests. Please try again later.",
                "requests",
                "rate_limit_exceeded",
            )
        )
        return ErrorAnswer(429, body, headers)
    if kind == "quota":
        body = (
            _anthropic("rate_limit_error", "Your credit balance is too low")
            if anthropic
            else _openai(
                "You exceeded your current quota.", "insufficient_quota", "insufficient_quota"
            )
        )
        return ErrorAnswer(429, body)
    if kind == "overloaded":
        if anthropic:
            return ErrorAnswer(529, _anthropic("overloaded_error", "Overloaded"), headers)
        return ErrorAnswer(
            503,
            _openai("The server is overloaded or not ready yet.", "server_error", None),
            headers,
        )
    if kind == "auth":
        if anthropic:
            return ErrorAnswer(
                401, _anthropic("authentication_error", f"invalid x-api-key {key_seen}".strip())
            )
        return ErrorAnswer(
            401,
            _openai(
                f"Incorrect API key provided: {key_seen or '(none)'}.",
                "invalid_request_error",
                "invalid_api_key",
            ),
        )
    if kind == "server_error":
        if anthropic:
            return ErrorAnswer(500, _anthropic("api_error", "Internal server error"))
        return ErrorAnswer(
            500,
            _openai("The server had an error while processing your request.", "server_error", None),
        )
    return invalid_request_answer(
        wire, "Invalid request: the fake server was scripted to refuse it."
    )


def invalid_request_answer(wire: str, message: str, status: int = 400) -> ErrorAnswer:
    """A 400 (or other) invalid-request answer with `message`."""
    if wire == "anthropic-messages":
        return ErrorAnswer(status, _anthropic("invalid_request_error", message))
    return ErrorAnswer(status, _openai(message, "invalid_request_error", None))


def stream_error_event(wire: str, answer: ErrorAnswer) -> SseItem:
    """The error as an SSE event sent after a stream started (status already 200)."""
    if wire == "anthropic-messages":
        return "error", dump_json(answer.body)
    error = answer.body.get("error", answer.body)
    if wire == "openai-responses":
        return "error", dump_json({"type": "error", "sequence_number": 1, "error": error})
    return None, dump_json({"error": error})
