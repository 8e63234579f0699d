"""Comal: a terminal coding agent with memory to the limit."""

__version__ = "0.1.0"

__all__ = ["__version__"]
