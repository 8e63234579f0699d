"""Plugins shipped with Comal (loaded through the `comal.plugins` entry points like any other)."""
