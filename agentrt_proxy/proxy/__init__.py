"""Serving: the proxy between the host and the pinned servers, a tools/call's rules and tasks.

A module whose name begins with an underscore is the package's own (as h11 marks its modules):
nothing outside ``proxy`` imports it; ``session`` (what ``serve`` runs) is the package's one door.
"""
