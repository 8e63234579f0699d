"""Evidence tests use the context tests' real ledger and session builder."""

from tests.unit.context.conftest import builder, ledger

__all__ = ["builder", "ledger"]
