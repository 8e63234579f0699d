"""Child sessions: the coordinator that runs them, the delegation tools, their receipts."""
