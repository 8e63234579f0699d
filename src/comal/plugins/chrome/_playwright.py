"""Playwright, which the Chrome plugin drives Chromium with: an optional dependency
(`comal[chrome]`), so a core installation says which extra to install instead of a traceback."""

from __future__ import annotations

from comal.errors import missing_extra

try:
    from playwright.async_api import Browser as Browser
    from playwright.async_api import Error as PlaywrightError
    from playwright.async_api import Page as Page
    from playwright.async_api import async_playwright as async_playwright
except ModuleNotFoundError as exc:
    if exc.name is None or not exc.name.startswith("playwright"):
        raise
    raise missing_extra("playwright", "chrome", "the Chrome plugin") from None

__all__ = ["Browser", "Page", "PlaywrightError", "async_playwright"]
