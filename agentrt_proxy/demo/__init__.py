"""``python -m agentrt_proxy.demo``: the demo's entry point (the walk-through lives in ``cli.demo``)."""
