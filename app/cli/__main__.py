"""`python -m app.cli`: the `calmon` command (the demo starts its server this way)."""

import sys

from app.cli import main

sys.exit(main())
