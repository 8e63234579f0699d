"""The native tools Comal offers every session: the one module that imports them all.

`tools/base.py` holds the contract the tools implement and imports none of them, so the
tool modules depend on the contract and this registry on the tools, with no circle.
"""

from __future__ import annotations

from collections.abc import Iterable

from comal.tools.base import Tool
from comal.tools.edits import EditTool, WriteTool
from comal.tools.files import ReadTool
from comal.tools.search import GlobTool, GrepTool
from comal.tools.shell import BashTool


def default_tools() -> list[Tool]:
    """Fresh instances of the native tools: Read, Write, Edit, Bash, Glob, Grep."""
    tools: Iterable[Tool] = (
        ReadTool(),
        WriteTool(),
        EditTool(),
        BashTool(),
        GlobTool(),
        GrepTool(),
    )
    return list(tools)
