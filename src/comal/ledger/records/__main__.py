"""`python -m comal.ledger.records [--write-doc]`: print or rewrite the entry-kind table."""

from __future__ import annotations

import sys

from comal.ledger.records import main

raise SystemExit(main(sys.argv[1:]))
