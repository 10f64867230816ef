"""The offline description scanner: tool poisoning found in what servers list (decision 0019).

Pure and deterministic, stdlib only. ``_fields`` turns a tool, a prompt or a server's
instructions into the texts a model reads; the rules (``_hidden``, ``_phrases`` applied by
``_textrules``, ``_payloads``, ``_secrets``, ``_shadowing``) find; ``_engine.scan`` runs them all.
``_rules.RULES`` names every rule and its severity. It sits below ``upstream`` (which scans
at pin and check) and above the wire, and stands alone: it may import only ``canonical`` and
``errors`` of the package (it imports neither today), so it escapes its spans itself.

A module whose name begins with an underscore is the package's own (as h11 marks its modules):
nothing outside ``scan`` imports it; callers import the names below from ``scan``.
"""

from agentrt_proxy.scan._engine import ScanResult, scan, scan_definition
from agentrt_proxy.scan._fields import (
    instructions_definition,
    prompt_definition,
    resource_definition,
    tool_definition,
)
from agentrt_proxy.scan._model import HARD, SOFT, Definition, Finding, Listing, Text
from agentrt_proxy.scan._rules import ASKS, RULES

__all__ = [
    "ASKS",
    "HARD",
    "RULES",
    "SOFT",
    "Definition",
    "Finding",
    "Listing",
    "ScanResult",
    "Text",
    "instructions_definition",
    "prompt_definition",
    "resource_definition",
    "scan",
    "scan_definition",
    "tool_definition",
]
