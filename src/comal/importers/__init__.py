"""importers package."""
