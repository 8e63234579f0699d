"""Exact input counts from the server itself, where it offers them.

llama.cpp's `llama-server` renders a Chat request with the model's own chat template (tools
included) at `POST /apply-template` and counts a text with the model's own vocabulary at
`POST /tokenize`; together they give the prompt tokens the server will see, before anything is
sent. (Ollama reports `prompt_eval_count` with each answer, which arrives as measured usage.)
"""

from __future__ import annotations

import httpx2

from comal.providers.http_stream import encode_body


async def llamacpp_count(
    client: httpx2.AsyncClient, root: str, headers: dict[str, str], body: bytes
) -> int | None:
    """The prompt tokens llama.cpp counts for a Chat request body, or None if it cannot say.

    Never raises: counting is best effort.
    """
    timeout = httpx2.Timeout(30.0, connect=5.0)
    try:
        rendered = await client.post(
            f"{root}/apply-template", content=body, headers=headers, timeout=timeout
        )
        prompt = rendered.json().get("prompt") if rendered.status_code == 200 else None
        if not isinstance(prompt, str):
            return None
        ask = encode_body({"content": prompt, "add_special": True, "parse_special": True})
        counted = await client.post(
            f"{root}/tokenize", content=ask, headers=headers, timeout=timeout
        )
        tokens = counted.json().get("tokens") if counted.status_code == 200 else None
    except (httpx2.HTTPError, ValueError, AttributeError):
        return None
    return len(tokens) if isinstance(tokens, list) else None
