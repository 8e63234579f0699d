"""A minimal JSON-schema check for tool arguments, before permissions or effects.

Supports the subset the native tool schemas use: `type` (object, array, string, integer,
number, boolean), `required`, `properties`, `additionalProperties: false`, `items`, `enum`,
`minimum`, `maximum`, `minItems`. Booleans are never accepted as numbers. The first problem
found is reported with its JSON path so the model can correct the call.
"""

from __future__ import annotations

from collections.abc import Mapping

from comal.messages import JSONObject, JSONValue, ToolSpec

_TYPE_NAMES = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
}


def validate_arguments(spec: ToolSpec, arguments: JSONObject) -> str | None:
    """Check `arguments` against `spec.parameters`.

    Args:
        spec: the tool spec whose schema applies.
        arguments: the parsed call arguments.

    Returns:
        None when valid, else one clear sentence naming the tool and the offending field.
    """
    problem = _check(spec.parameters, arguments, "arguments")
    return None if problem is None else f"invalid arguments for {spec.name}: {problem}"


def _type_ok(kind: str, value: JSONValue) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def _number(value: int | float) -> str:
    """`600.0` shows as `600`, as the model would write it."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _check(schema: Mapping[str, JSONValue], value: JSONValue, where: str) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, str) and not _type_ok(kind, value):
        return f"{where} must be {_TYPE_NAMES.get(kind, kind)}"
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        allowed = ", ".join(repr(v) for v in enum)
        return f"{where} must be one of {allowed}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        low, high = schema.get("minimum"), schema.get("maximum")
        if isinstance(low, int | float) and value < low:
            return f"{where} must be at least {_number(low)}"
        if isinstance(high, int | float) and value > high:
            return f"{where} must be at most {_number(high)}"
    if isinstance(value, dict):
        return _check_object(schema, value, where)
    if isinstance(value, list):
        min_items = schema.get("minItems")
        if isinstance(min_items, int) and len(value) < min_items:
            return f"{where} must have at least {min_items} item(s)"
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                problem = _check(items, item, f"{where}[{index}]")
                if problem is not None:
                    return problem
    return None


def _check_object(
    schema: Mapping[str, JSONValue], value: Mapping[str, JSONValue], where: str
) -> str | None:
    required = schema.get("required")
    for name in required if isinstance(required, list) else []:
        if isinstance(name, str) and name not in value:
            return f"{where}.{name} is required"
    properties = schema.get("properties")
    props = properties if isinstance(properties, dict) else {}
    if schema.get("additionalProperties") is False:
        unknown = sorted(k for k in value if k not in props)
        if unknown:
            return f"{where} has unknown field(s): {', '.join(unknown)}"
    for name, sub in props.items():
        if name in value and isinstance(sub, dict):
            problem = _check(sub, value[name], f"{where}.{name}")
            if problem is not None:
                return problem
    return None
