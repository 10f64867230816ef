"""What every request of the console needs: the database, the configuration, the guard, the
decider's name, and the event that ends every stream when the console stops."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from agentrt_proxy.cli._console_guard import Guard
from agentrt_proxy.config import Config


@dataclass
class Console:
    database: str
    config: Config
    config_path: str
    guard: Guard
    by: str
    stopping: threading.Event
