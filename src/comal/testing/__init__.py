"""testing package."""
