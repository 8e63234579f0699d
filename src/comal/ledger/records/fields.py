"""Reading payload fields: the one place a recorded value is checked for its JSON type.

Every reader of a payload goes through a record (`comal.ledger.records`), and every record
reads its fields with these functions. A field that is missing or holds the wrong JSON type
reads as the default the record names (never an exception): a damaged or older entry reads
as far as it can. Booleans are not integers here, though Python's `bool` is an `int`.
"""

from __future__ import annotations

from comal.messages import JSONObject, JSONValue


def text(payload: JSONObject, key: str, default: str = "") -> str:
    """A string field, or `default`."""
    value = payload.get(key)
    return value if isinstance(value, str) else default


def text_or_none(payload: JSONObject, key: str) -> str | None:
    """A string field, or None when it is missing, null or not a string."""
    value = payload.get(key)
    return value if isinstance(value, str) else None


def integer(payload: JSONObject, key: str, default: int = 0) -> int:
    """An integer field (not a boolean), or `default`."""
    value = payload.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def int_or_none(payload: JSONObject, key: str) -> int | None:
    """An integer field (not a boolean), or None."""
    value = payload.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def number_or_none(payload: JSONObject, key: str) -> float | None:
    """A number field (int or float, not a boolean), or None."""
    value = payload.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def flag(payload: JSONObject, key: str, default: bool = False) -> bool:
    """A boolean field, or `default`."""
    value = payload.get(key)
    return value if isinstance(value, bool) else default


def flag_or_none(payload: JSONObject, key: str) -> bool | None:
    """A boolean field, or None."""
    value = payload.get(key)
    return value if isinstance(value, bool) else None


def obj(payload: JSONObject, key: str) -> JSONObject:
    """An object field, or an empty object."""
    value = payload.get(key)
    return value if isinstance(value, dict) else {}


def obj_or_none(payload: JSONObject, key: str) -> JSONObject | None:
    """An object field, or None."""
    value = payload.get(key)
    return value if isinstance(value, dict) else None


def objects(payload: JSONObject, key: str) -> tuple[JSONObject, ...]:
    """The objects of a list field (other items are skipped); empty when it is not a list."""
    value = payload.get(key)
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, dict))


def objects_or_none(payload: JSONObject, key: str) -> tuple[JSONObject, ...] | None:
    """As `objects`, or None when the field is missing or not a list."""
    return objects(payload, key) if isinstance(payload.get(key), list) else None


def strings(payload: JSONObject, key: str) -> tuple[str, ...]:
    """The strings of a list field (other items are skipped); empty when it is not a list."""
    value = payload.get(key)
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, str))


def strings_or_none(payload: JSONObject, key: str) -> tuple[str, ...] | None:
    """As `strings`, or None when the field is missing or not a list."""
    return strings(payload, key) if isinstance(payload.get(key), list) else None


def put(payload: JSONObject, key: str, value: JSONValue | None) -> None:
    """Set an optional field: None leaves it out."""
    if value is not None:
        payload[key] = value


def json_list(items: tuple[JSONObject, ...] | tuple[str, ...]) -> list[JSONValue]:
    """A tuple of JSON values as the list a payload holds."""
    return list(items)
