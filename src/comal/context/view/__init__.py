"""The request the model sees, as a pure function of the ledger."""
