"""`python -m comal` runs the CLI."""

from comal.cli.main import main

raise SystemExit(main())
