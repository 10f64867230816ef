"""Every exception of the lower packages sits on the branch of the one tree that says whose fault it is.

The lower packages are canonical/, config/, mcp/, upstream/ and testing/ (text/ raises nothing of
its own). The walk is generated from the packages, so a new exception class outside the tree fails
it; the table says which branch each one belongs on.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import agentrt_proxy
from agentrt_proxy import errors
from agentrt_proxy.canonical import JSONBoundaryError
from agentrt_proxy.canonical.durations import DurationError
from agentrt_proxy.canonical.schema_form import SchemaFormError
from agentrt_proxy.config import ConfigError
from agentrt_proxy.mcp.errors import ConnectError, McpError, ServerSpecError, SessionClosed, TransportError
from agentrt_proxy.mcp.server import JsonRpcError
from agentrt_proxy.mcp.spans import SpanError
from agentrt_proxy.upstream import LoadError, ManifestError, OpenError

LOWER_PACKAGES = ("canonical", "config", "mcp", "upstream", "testing", "text")

# Control flow, not errors: each is raised and caught inside one function's walk.
CONTROL_FLOW = {"agentrt_proxy.canonical._strict._Found", "agentrt_proxy.upstream.checks.Refusal"}

BRANCHES = [
    (JSONBoundaryError, errors.InvalidValue),
    (DurationError, errors.InvalidValue),
    (SchemaFormError, errors.InvalidValue),
    (SpanError, errors.InvalidValue),
    (ConfigError, errors.ConfigurationError),
    (ServerSpecError, errors.ConfigurationError),
    (McpError, errors.UpstreamError),
    (ConnectError, errors.UpstreamNotSent),
    (TransportError, errors.UpstreamError),
    (SessionClosed, errors.UpstreamDropped),
    (JsonRpcError, errors.AgentrtError),
    (LoadError, errors.ConfigurationError),
    (ManifestError, errors.ConfigurationError),
    (OpenError, errors.ConfigurationError),
]


def exception_classes() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for package in LOWER_PACKAGES:
        module = importlib.import_module(f"agentrt_proxy.{package}")
        names = [module.__name__] + [
            info.name for info in pkgutil.walk_packages(module.__path__, prefix=f"{module.__name__}.")
        ]
        for name in names:
            for _, value in inspect.getmembers(importlib.import_module(name), inspect.isclass):
                if issubclass(value, BaseException) and value.__module__ == name and value not in found:
                    found.append(value)
    return found


def test_the_walk_finds_the_classes_it_should() -> None:
    found = {f"{cls.__module__}.{cls.__qualname__}" for cls in exception_classes()}
    assert {f"{cls.__module__}.{cls.__qualname__}" for cls, _ in BRANCHES} <= found
    assert agentrt_proxy.__name__ == "agentrt_proxy"


def test_every_exception_of_the_lower_packages_derives_from_the_root_or_is_control_flow() -> None:
    outside = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in exception_classes()
        if not issubclass(cls, errors.AgentrtError)
    ]
    assert sorted(outside) == sorted(CONTROL_FLOW)


@pytest.mark.parametrize(("cls", "branch"), BRANCHES, ids=[cls.__name__ for cls, _ in BRANCHES])
def test_each_exception_sits_on_the_branch_of_whose_fault_it_is(
    cls: type[BaseException], branch: type[BaseException]
) -> None:
    assert issubclass(cls, branch)


def test_no_two_exceptions_of_the_lower_packages_share_a_name() -> None:
    names = [cls.__name__ for cls in exception_classes()]
    assert sorted({name for name in names if names.count(name) > 1}) == []


def test_a_session_that_closed_is_still_a_transport_failure_and_a_dropped_request() -> None:
    # The client catches TransportError around every send; SessionClosed must stay one of them.
    assert issubclass(SessionClosed, TransportError)
    assert not issubclass(SessionClosed, errors.UpstreamProtocolError)
    assert not issubclass(ServerSpecError, errors.UpstreamError)


def test_the_value_errors_stay_value_errors() -> None:
    # Callers catch ValueError around the boundary, a duration, a schema and a span.
    for cls in (JSONBoundaryError, DurationError, SchemaFormError, SpanError):
        assert issubclass(cls, ValueError)
