"""``python -m agentrt_proxy.demo``: the same walk-through as ``agentrt-proxy demo``."""

import sys

from agentrt_proxy.cli.demo import main

sys.exit(main())
