"""Relief under pressure: projection first, then a deterministic checkpoint."""
