"""The ledger: the durable, append-only SQLite book every view is derived from."""
