"""The single-file build: what build_zipapp.py writes, and that it runs where it must."""

from __future__ import annotations

import glob
import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, run_program

BUILDER = REPO_ROOT / "build_zipapp.py"


def build(output: Path, *extra: str) -> Path:
    """Run the builder as a user would and return the archive's path."""
    result = subprocess.run(
        [sys.executable, str(BUILDER), "--output", str(output), *extra],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600, check=False,
    )
    assert result.returncode == 0, result.stderr
    return output


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def find_python(version: str) -> str | None:
    """An interpreter for `version` ("3.10"): on PATH, else a pyenv build; None if absent."""
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(glob.glob(str(Path.home() / f".pyenv/versions/{version}.*/bin/python3")))
    for candidate in candidates:
        if not candidate:
            continue
        # A pyenv shim exists even when the version is not selected; it then fails.
        probe = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"],
                               capture_output=True, text=True, check=False)
        if probe.returncode == 0 and probe.stdout.strip() == str(tuple(map(int, version.split(".")))):
            return candidate
    return None


def require_python(version: str) -> str:
    python = find_python(version)
    if python is None:
        pytest.skip(f"python{version} is not installed here")
    return python


@pytest.fixture(scope="session")
def fresh_pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build of this checkout made for this test session."""
    return build(tmp_path_factory.mktemp("build-a") / "agentrt-proxy.pyz")


def expected_help_first_line() -> str:
    from agentrt_proxy.text import cli_text

    return cli_text.help_text().splitlines()[0]


@pytest.mark.program
def test_help_starts_with_the_scope_statement() -> None:
    result = run_program(["--help"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == expected_help_first_line()


@pytest.mark.program
def test_version_prints_the_package_version() -> None:
    from agentrt_proxy import __version__

    result = run_program(["--version"])
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"agentrt-proxy {__version__}\n"


def test_the_pyz_runs_with_no_site_packages_at_all(fresh_pyz: Path) -> None:
    result = subprocess.run([sys.executable, "-I", "-S", str(fresh_pyz), "--help"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == expected_help_first_line()


def test_two_builds_of_one_checkout_are_byte_identical(fresh_pyz: Path, tmp_path: Path) -> None:
    again = build(tmp_path / "elsewhere" / "agentrt-proxy.pyz")
    assert sha256(again) == sha256(fresh_pyz)


def test_a_sources_only_build_is_reproducible_too(tmp_path: Path) -> None:
    first = build(tmp_path / "one.pyz", "--no-pyc")
    second = build(tmp_path / "two.pyz", "--no-pyc")
    assert sha256(first) == sha256(second)
    assert not [n for n in zipfile.ZipFile(first).namelist() if n.endswith(".pyc")]


def test_the_archive_holds_no_caches_install_records_or_tests(fresh_pyz: Path) -> None:
    names = zipfile.ZipFile(fresh_pyz).namelist()
    parts = {part for name in names for part in name.split("/")}
    assert not parts & {"__pycache__", "RECORD", "INSTALLER", "REQUESTED", "direct_url.json",
                        "tests", "benchmarks", "bin"}
    assert not [n for n in names if n.endswith((".pyi", ".so", ".pyd"))]
    assert names == sorted(names)
    for required in ("__main__.py", "agentrt_proxy/cli/main.py", "jsonschema/__init__.py",
                     "rpds/__init__.py", "exceptiongroup/__init__.py", "typing_extensions.py",
                     "jsonschema_specifications/schemas/draft202012/metaschema.json"):
        assert required in names


def test_every_entry_has_the_fixed_date_and_mode(fresh_pyz: Path) -> None:
    for info in zipfile.ZipFile(fresh_pyz).infolist():
        assert info.date_time == (1980, 1, 1, 0, 0, 0), info.filename
        assert info.external_attr >> 16 == 0o100644, info.filename
        assert info.compress_type == zipfile.ZIP_DEFLATED, info.filename


# Run from outside the checkout with only the archive on sys.path. -I ignores PYTHONPATH,
# so the script puts the archive first itself; -S keeps the host's site-packages away.
DIALECT_CHECK = r"""
import sys
sys.path.insert(0, sys.argv[1])
import anyio, jsonschema, rpds

assert jsonschema.__file__.startswith(sys.argv[1]), jsonschema.__file__
assert rpds.HashTrieMap.__module__ == "pyrsistent_as_rpds.pure", rpds.HashTrieMap.__module__

V2020 = jsonschema.Draft202012Validator
tuple_2020 = {"$schema": "https://json-schema.org/draft/2020-12/schema",
              "type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
              "items": False}
V2020.check_schema(tuple_2020)
assert V2020(tuple_2020).is_valid(["a", 1])
assert not V2020(tuple_2020).is_valid([1, "a"])
assert not V2020(tuple_2020).is_valid(["a", 1, 2])

closed_2020 = {"$schema": "https://json-schema.org/draft/2020-12/schema",
               "$defs": {"base": {"properties": {"a": {"type": "string"}}}},
               "allOf": [{"$ref": "#/$defs/base"}], "unevaluatedProperties": False}
assert jsonschema.validators.validator_for(closed_2020) is V2020
assert V2020(closed_2020).is_valid({"a": "x"})
assert not V2020(closed_2020).is_valid({"a": "x", "b": 1})

V7 = jsonschema.Draft7Validator
tuple_7 = {"$schema": "http://json-schema.org/draft-07/schema#",
           "items": [{"type": "string"}], "additionalItems": False}
V7.check_schema(tuple_7)
assert V7(tuple_7).is_valid(["a"])
assert not V7(tuple_7).is_valid([1])
assert not V7(tuple_7).is_valid(["a", "b"])

deps_7 = {"dependencies": {"card": ["billing"]}}
assert V7(deps_7).is_valid({"card": 1, "billing": 2})
assert not V7(deps_7).is_valid({"card": 1})

errors = sorted(e.message for e in V2020({"type": "object", "required": ["x"]}).iter_errors({}))
assert errors == ["'x' is a required property"], errors

async def task_group_runs():
    async with anyio.create_task_group() as group:
        group.start_soon(anyio.sleep, 0)

anyio.run(task_group_runs)
print("ok", sys.version_info[0], sys.version_info[1])
"""


@pytest.mark.parametrize("version", ["current", "3.10", "3.13"])
def test_jsonschema_from_the_zip_validates_draft_2020_12_and_draft_07(
    fresh_pyz: Path, tmp_path: Path, version: str
) -> None:
    python = sys.executable if version == "current" else require_python(version)
    result = subprocess.run([python, "-I", "-S", "-c", DIALECT_CHECK, str(fresh_pyz)],
                            capture_output=True, text=True, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok ")


def test_the_zip_on_pythonpath_wins_over_installed_copies(fresh_pyz: Path, tmp_path: Path) -> None:
    # The test venv has its own jsonschema; a zip named on PYTHONPATH must shadow it.
    script = "import jsonschema, anyio; print(jsonschema.__file__); print(anyio.__file__)"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            cwd=tmp_path, env={"PYTHONPATH": str(fresh_pyz)}, check=False)
    assert result.returncode == 0, result.stderr
    assert all(line.startswith(str(fresh_pyz)) for line in result.stdout.splitlines())


# Imports from the archive's byte-code (built by this interpreter, so the .pyc is used) and
# reports what the build left out of it and what it kept.
BYTECODE_PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from agentrt_proxy.store import _tx as tx
code = tx.Tx.update_run.__code__
print(json.dumps({
    "from_pyc": tx.__file__.endswith(".pyc"),
    "module_doc": tx.__doc__, "function_doc": tx.Tx.update_run.__doc__,
    "class_doc": tx.Tx.__doc__,
    "columns": sorted({str(col) for _, _, col, _ in code.co_positions()}),
    "lines": sorted({line for _, line, _, _ in code.co_positions() if line}),
}))
"""


@pytest.mark.skipif(sys.version_info < (3, 11), reason="column ranges are Python 3.11's")
def test_the_bytecode_leaves_out_function_docstrings_and_column_ranges_and_keeps_lines(
    fresh_pyz: Path,
) -> None:
    result = subprocess.run([sys.executable, "-I", "-S", "-c", BYTECODE_PROBE, str(fresh_pyz)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    probe = json.loads(result.stdout)
    assert probe["from_pyc"]
    assert probe["module_doc"] is None and probe["function_doc"] is None
    assert probe["class_doc"]  # a dataclass without one would compute one at import
    assert probe["columns"] == ["None"]
    assert len(probe["lines"]) > 3  # tracebacks still name the line


# Runs the archive's own __main__.py with a stand-in CLI that reports sys.path, and with
# site-packages-like folders on sys.path, as a host Python with .pth files would have.
PATH_PROBE = r"""
import json, sys, types, zipfile
pyz = sys.argv[1]
sys.path[:0] = [pyz]
sys.path += ["/nowhere/lib/python3/site-packages", "/nowhere/lib/python3/dist-packages"]
probe = types.ModuleType("agentrt_proxy.cli.main")
probe.main = lambda: print(json.dumps(sys.path)) or 0
sys.modules["agentrt_proxy.cli.main"] = probe
source = zipfile.ZipFile(pyz).read("__main__.py")
exec(compile(source, "__main__.py", "exec"), {"__name__": "__main__"})
"""


def test_the_bootstrap_drops_site_packages_from_sys_path(fresh_pyz: Path) -> None:
    result = subprocess.run([sys.executable, "-c", PATH_PROBE, str(fresh_pyz)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    path = json.loads(result.stdout)
    assert path[0] == str(fresh_pyz)
    assert not [p for p in path if "site-packages" in p or "dist-packages" in p]


def test_an_older_python_is_refused_with_one_clear_line(fresh_pyz: Path) -> None:
    python = require_python("3.9")
    result = subprocess.run([python, str(fresh_pyz), "--version"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert "needs Python 3.10 or newer" in result.stderr


def test_the_builder_refuses_an_older_python(tmp_path: Path) -> None:
    python = require_python("3.9")
    result = subprocess.run([python, str(BUILDER), "--output", str(tmp_path / "x.pyz")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1
    assert "needs Python 3.10 or newer" in result.stderr
    assert not (tmp_path / "x.pyz").exists()
