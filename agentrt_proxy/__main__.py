"""``python -m agentrt_proxy``: the same program as the single file."""

import sys

from .cli import main

sys.exit(main())
