"""Reading recorded outputs exactly: EvidenceRead and the evidence index."""
