"""What an image in a request costs, in the provider's own tokens.

The canonical rendering (`rendering.py`) shows an image as a short tag; a provider bills its
pixels. The replay prices each image from the dimensions its header states (PNG, JPEG, GIF,
WebP), by the rule of the provider the recording's model speaks to:

- Anthropic (`claude` models, Claude Code recordings): an image whose long edge passes 1,568 px
  is first scaled down to it; tokens = width × height / 750, at most 1,600 (Anthropic's vision
  guide: "tokens = (width px * height px)/750"; larger images are scaled to about 1,600 tokens).
- Gemini: 258 tokens when both edges are at most 384 px, else 258 per 768 × 768 tile of the
  image scaled so its short edge is 768 px at most (Gemini API, "Image understanding").
- OpenAI and every other model (high detail): scaled to fit 2,048 × 2,048, then so its short
  edge is at most 768 px; tokens = 85 + 170 per 512 × 512 tile (OpenAI's vision guide).

An image whose header gives no dimensions is priced at the rule's largest ordinary image
(Anthropic 1,600; Gemini 258 × 4; OpenAI 85 + 170 × 4, a 1,024 × 1,024 image).
"""

from __future__ import annotations

import base64
import binascii
import math
import struct

ANTHROPIC_MAX_EDGE = 1_568
ANTHROPIC_PIXELS_PER_TOKEN = 750
ANTHROPIC_MAX_TOKENS = 1_600
OPENAI_BASE, OPENAI_PER_TILE, OPENAI_TILE = 85, 170, 512
GEMINI_TOKENS, GEMINI_SMALL, GEMINI_TILE = 258, 384, 768
_HEAD_CHARS = 1 << 17
"""Base64 characters decoded to find the size (a JPEG's frame can follow 64 KiB of EXIF)."""


def provider_of(model: str, source: str) -> str:
    """`anthropic`, `gemini` or `openai`: whose image rule prices the recording's images."""
    name = f"{model} {source}".lower()
    if "claude" in name:
        return "anthropic"
    if "gemini" in name:
        return "gemini"
    return "openai"


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG, GIF, WebP or JPEG header; None when it states none."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return width, height
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        return _webp_size(data)
    if data.startswith(b"\xff\xd8"):
        return _jpeg_size(data)
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """The size in a JPEG's first start-of-frame marker."""
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:
            at += 1
            continue
        length = int.from_bytes(data[at + 2 : at + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            if at + 9 > len(data):
                return None
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        at += 2 + length
    return None


def image_tokens(data_b64: str, provider: str) -> int:
    """Tokens `provider` bills for one base64 image (see module docstring)."""
    head = data_b64[:_HEAD_CHARS]
    if len(data_b64) > _HEAD_CHARS:
        head = head[: len(head) - len(head) % 4]
    try:
        size = image_size(base64.b64decode(head))
    except (binascii.Error, ValueError):
        size = None
    if size is not None and (size[0] <= 0 or size[1] <= 0):
        size = None
    if provider == "anthropic":
        return _anthropic(size)
    if provider == "gemini":
        return _gemini(size)
    return _openai(size)


def _anthropic(size: tuple[int, int] | None) -> int:
    if size is None:
        return ANTHROPIC_MAX_TOKENS
    width, height = size
    scale = min(1.0, ANTHROPIC_MAX_EDGE / max(width, height))
    pixels = (width * scale) * (height * scale)
    return min(ANTHROPIC_MAX_TOKENS, max(1, math.ceil(pixels / ANTHROPIC_PIXELS_PER_TOKEN)))


def _openai(size: tuple[int, int] | None) -> int:
    pixels = size if size is not None else (1_024, 1_024)
    fit = min(1.0, 2_048 / max(pixels))
    width, height = pixels[0] * fit, pixels[1] * fit
    short = min(1.0, 768 / min(width, height))
    tiles = math.ceil(width * short / OPENAI_TILE) * math.ceil(height * short / OPENAI_TILE)
    return OPENAI_BASE + OPENAI_PER_TILE * tiles


def _gemini(size: tuple[int, int] | None) -> int:
    if size is None:
        return GEMINI_TOKENS * 4
    width, height = size
    if width <= GEMINI_SMALL and height <= GEMINI_SMALL:
        return GEMINI_TOKENS
    scale = min(1.0, GEMINI_TILE / min(width, height))
    tiles = math.ceil(width * scale / GEMINI_TILE) * math.ceil(height * scale / GEMINI_TILE)
    return GEMINI_TOKENS * tiles
