"""The one program: the command table, flags, one module per command family and their views.

A module whose name begins with an underscore is the package's own (as h11 marks its modules):
nothing outside ``cli`` imports it; ``main`` (the command table: ``[project.scripts]``, ``python -m
agentrt_proxy``, the .pyz) and ``demo`` (``python -m agentrt_proxy.demo``) are the package's two
doors; every command's module is private to it.
"""
