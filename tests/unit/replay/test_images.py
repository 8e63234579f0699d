"""Images in a replayed request cost what their provider bills (worked out by hand here)."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest

from comal.messages import MediaPart, Message, ToolResultPart
from comal.replay.images import image_size, image_tokens, provider_of
from comal.replay.rendering import SegmentCache, request_tokens


def png(width: int, height: int) -> bytes:
    """A real, decodable grey PNG of that size."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def jpeg_header(width: int, height: int) -> bytes:
    """SOI, an APP0 segment, then a baseline start-of-frame naming the size."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_sizes_are_read_from_png_jpeg_and_gif_headers() -> None:
    assert image_size(png(1000, 750)) == (1000, 750)
    assert image_size(jpeg_header(640, 480)) == (640, 480)
    assert image_size(b"GIF89a" + struct.pack("<HH", 320, 200) + b"\x00" * 8) == (320, 200)
    assert image_size(b"not an image") is None


@pytest.mark.parametrize(
    ("width", "height", "anthropic", "openai"),
    [
        # 1000 × 750 / 750 = 1,000; OpenAI: 2 × 2 tiles of 512 → 85 + 4 × 170.
        (1000, 750, 1000, 765),
        # Long edge 3000 → 1568 × 1045.3 = 2,186 tokens, capped at 1,600; OpenAI: fit 2048 ×
        # 1365.3, short edge to 768 → 1152 × 768: 3 × 2 tiles → 85 + 6 × 170.
        (3000, 2000, 1600, 1105),
        # 100 × 100 → 10,000 / 750 = 13.3 → 14; one tile.
        (100, 100, 14, 255),
    ],
)
def test_each_rule_prices_an_image_from_its_dimensions(
    width: int, height: int, anthropic: int, openai: int
) -> None:
    data = b64(png(width, height))

    assert image_tokens(data, "anthropic") == anthropic
    assert image_tokens(data, "openai") == openai


def test_an_image_without_dimensions_is_priced_as_a_large_one() -> None:
    data = b64(b"\x00" * 64)

    assert image_tokens(data, "anthropic") == 1_600
    assert image_tokens(data, "openai") == 85 + 4 * 170
    assert image_tokens(data, "gemini") == 4 * 258
    assert image_tokens(b64(png(300, 300)), "gemini") == 258


def test_the_provider_follows_the_recorded_model() -> None:
    assert provider_of("claude-sonnet-4-20250514", "claude-code") == "anthropic"
    assert provider_of("", "claude-code") == "anthropic"
    assert provider_of("gemini-3-pro-preview", "mini-swe-agent") == "gemini"
    assert provider_of("gpt-5-mini", "codex") == "openai"


def test_a_request_holding_an_image_costs_its_billed_tokens() -> None:
    image = MediaPart("image/png", b64(png(1000, 750)))
    bare = Message("user", (ToolResultPart("c1", "screenshot", "the page"),))
    shown = Message("user", (ToolResultPart("c1", "screenshot", "the page", media=(image,)),))
    cache = SegmentCache(images="anthropic")

    without = request_tokens(cache.request("s", [bare]))
    with_image = request_tokens(cache.request("s", [shown]))
    other = MediaPart("image/png", b64(png(1000, 751)))
    second = Message("user", (ToolResultPart("c1", "screenshot", "the page", media=(other,)),))

    assert 1_000 < with_image - without < 1_000 + 40  # its tag, then 1,000 billed tokens
    # Two images of one size in bytes are told apart by the tag's digest.
    assert cache.request("s", [second])[-1].text != cache.request("s", [shown])[-1].text
