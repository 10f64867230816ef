"""``python -m agentrt_proxy``: the same program as the single file."""

import sys

from agentrt_proxy.cli.main import main

sys.exit(main())
