"""The offline description scanner: tool poisoning found in what servers list (decision 0019).

Pure and deterministic, stdlib only. ``fields`` turns a tool, a prompt or a server's
instructions into the texts a model reads; the rules (``hidden``, ``phrases`` applied by
``textrules``, ``payloads``, ``secrets``, ``shadowing``) find; ``engine.scan`` runs them all.
``rules.RULES`` names every rule and its severity. It sits below ``upstream`` (which scans
at pin and check) and above the wire, and stands alone: it may import only ``canonical`` and
``errors`` of the package (it imports neither today), so it escapes its spans itself.
"""

from agentrt_proxy.scan.engine import ScanResult, scan, scan_definition
from agentrt_proxy.scan.fields import (
    instructions_definition,
    prompt_definition,
    resource_definition,
    tool_definition,
)
from agentrt_proxy.scan.model import HARD, SOFT, Definition, Finding, Listing, Text
from agentrt_proxy.scan.rules import ASKS, RULES

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
