"""Stored payload text decodes to exactly what the standard decoder gives, or fails as it does.

`decode_payload` reads with msgspec first and hands what msgspec refuses (lone surrogates,
numbers beyond a double's range, damaged text) to the standard decoder; whichever reads it, the
value must be the one `json.loads` returns — every float to the bit, every integer whole — and
text `json.loads` refuses must be refused.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from comal.ledger.canonical import decode_payload
from comal.messages import JSONValue, canonical_json
from tests.unit.ledger.json_strategies import json_values, texts


def _same(a: object, b: object) -> bool:
    """Equal, floats compared by their bits (so -0.0 is not 0.0) and types compared too."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and isinstance(b, float):
        return math.copysign(1.0, a) == math.copysign(1.0, b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(texts, json_values, max_size=6))
def test_canonical_text_decodes_as_the_standard_decoder_does(payload: dict[str, JSONValue]) -> None:
    text = canonical_json(payload)
    assert _same(decode_payload(text), json.loads(text))


@pytest.mark.parametrize(
    "text",
    [
        '{"a":"\\udcff"}',  # a lone surrogate, as surrogateescape makes of invalid UTF-8
        '{"a":"\udcff"}',  # the same, raw in the text (no UTF-8 holds it)
        '{"big":123456789012345678901234567890}',
        '{"tiny":-1e-400,"huge":1e400}',
        '{"x": 1}',  # whitespace: not canonical, still read
        '{"k":1,"k":2}',  # a repeated key: the last wins, as for json.loads
    ],
)
def test_what_the_fast_decoder_refuses_is_read_as_before(text: str) -> None:
    assert _same(decode_payload(text), json.loads(text))


@pytest.mark.parametrize("text", ['{"a":1', '{"a":1}}', "", '{"a":NaN', '{"a":"\udcff'])
def test_damaged_text_is_refused_as_the_standard_decoder_refuses_it(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    with pytest.raises(json.JSONDecodeError):
        decode_payload(text)


@pytest.mark.parametrize("text", ["[1,2]", '"text"', "3"])
def test_a_payload_that_is_not_an_object_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a JSON object"):
        decode_payload(text)
