"""Hypothesis strategies for any JSON value a payload may hold, lone surrogates included."""

from __future__ import annotations

from hypothesis import strategies as st

from comal.messages import JSONValue

# Lone surrogates are what `surrogateescape` makes of invalid UTF-8; they must survive too.
_chars = st.one_of(st.characters(), st.characters(categories=["Cs"]))
texts = st.text(alphabet=_chars, max_size=40)
_scalars: st.SearchStrategy[JSONValue] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),  # past 64 bits too
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
json_values: st.SearchStrategy[JSONValue] = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)),
    max_leaves=12,
)
