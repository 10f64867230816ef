"""The pinned servers: what pin records, manifests, the pure load checks, the registry of offered tools, a
loaded tool's call, connecting.

``upstream.validation`` (the tools' input schemas compiled, cached) is not re-exported here: it
loads jsonschema, which the cold start keeps off the path to the first listing, so its users
import it by its own name.

A module whose name begins with an underscore is the package's own (as h11 marks its modules):
nothing outside ``upstream`` imports it; callers import the names below from ``upstream``, or a
public module (``checks``, ``pins``, ``review``, ``validation``…) by its name.
"""

from agentrt_proxy.upstream._display import ToolDisplay, annotations_for, display_of
from agentrt_proxy.upstream._manifest import (
    ManifestError,
    manifest_text,
    read_manifest,
    write_manifest,
)
from agentrt_proxy.upstream._registry import LoadError, LoadReport, RefusedTool, Registered, decide, load
from agentrt_proxy.upstream._servers import (
    Connector,
    DownServer,
    OpenError,
    OpenServers,
    default_connector,
    open_servers,
    pin_server,
)
from agentrt_proxy.upstream._spec import (
    ToolSpec,
)
from agentrt_proxy.upstream.loaded_tool import LoadedTool, is_known_answer, known_answer_pattern
from agentrt_proxy.upstream.pins import LiveTool, Manifest, PinnedTool, hints_text, live_tool, pin_tool
from agentrt_proxy.upstream.supervisor import Supervision, Supervisor, pinned_listing

__all__ = [
    "Connector",
    "DownServer",
    "LiveTool",
    "LoadError",
    "LoadReport",
    "LoadedTool",
    "Manifest",
    "ManifestError",
    "OpenError",
    "OpenServers",
    "PinnedTool",
    "RefusedTool",
    "Registered",
    "Supervision",
    "Supervisor",
    "ToolDisplay",
    "ToolSpec",
    "annotations_for",
    "decide",
    "default_connector",
    "display_of",
    "hints_text",
    "is_known_answer",
    "known_answer_pattern",
    "live_tool",
    "load",
    "manifest_text",
    "open_servers",
    "pin_server",
    "pin_tool",
    "pinned_listing",
    "read_manifest",
    "write_manifest",
]
