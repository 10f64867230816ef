"""Build dist/agentrt-proxy.pyz: the package plus its vendored dependencies in one file.

Run with `python3 build_zipapp.py`. Standard library only, so it works on a machine that
has nothing but python3 (and, for the first build, access to PyPI; later builds reuse
the staged dependencies in .stage/ and need no network).

The archive is reproducible: entries are sorted, every timestamp is 1980-01-01 00:00:00,
every mode is 0644 and every entry is deflated at level 9, so two builds of the same
checkout with the same interpreter give the same bytes. Why the dependencies are what
they are: docs/decisions/0001-jsonschema-from-the-zip.md.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import io
import marshal
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

MIN_PYTHON = (3, 10)
if sys.version_info < MIN_PYTHON:
    # Checked before anything else runs; this module stays parseable on older Pythons.
    sys.stderr.write(f"build_zipapp.py: needs Python 3.10 or newer, this is {sys.version.split()[0]}\n")
    raise SystemExit(1)

ROOT = Path(__file__).resolve().parent
PACKAGE = "agentrt_proxy"
DEFAULT_OUTPUT = ROOT / "dist" / "agentrt-proxy.pyz"
VENDOR_REQUIREMENTS = ROOT / "requirements" / "runtime-vendor.txt"
STAGE_DIR = ROOT / ".stage" / "vendor"
STAMP_NAME = ".staged-from"

# Bump when the staging recipe changes in a way the requirement file does not show.
STAGE_RECIPE = "2"

# jsonschema 4.26 imports `rpds`, whose only distribution (rpds-py) is a compiled
# extension that cannot be imported from a zip. pyrsistent-as-rpds-py provides the same
# four types in pure Python; this package makes them importable under the name `rpds`.
RPDS_SHIM = '''"""Pure-Python stand-in for rpds-py (see docs/decisions/0001-jsonschema-from-the-zip.md)."""

from pyrsistent_as_rpds.pure import HashTrieMap, HashTrieSet, List, Queue

__all__ = ["HashTrieMap", "HashTrieSet", "List", "Queue"]
'''

# Markers are evaluated for the floor, whatever interpreter runs the build: pure wheels
# only, as seen by CPython 3.10. Together with --no-deps and a requirement file that
# lists the whole closure, nothing depends on the building interpreter's version.
PIP_TARGET_FLAGS = (
    "--no-deps",
    "--no-compile",
    "--only-binary=:all:",
    "--platform=any",
    "--implementation=py",
    "--abi=none",
    f"--python-version={MIN_PYTHON[0]}.{MIN_PYTHON[1]}",
    "--disable-pip-version-check",
    "--no-warn-script-location",
    "--root-user-action=ignore",
    "--quiet",
)

# Pruned from the vendored dependencies: metadata that is stale once files are pruned
# (RECORD) or that names this machine (direct_url.json), scripts, tests, stubs.
DROP_FILE_NAMES = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})
DROP_DIR_NAMES = frozenset({"__pycache__", "bin", "tests", "benchmarks"})
DROP_SUFFIXES = (".pyi", ".pyc", ".pyo")
# A native extension cannot load from inside a zip: refuse to ship one.
NATIVE_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")

# Fixed metadata for every entry: the zip format's earliest date, a regular file with
# mode 0644, "made on Unix" whatever the build OS.
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
ZIP_FILE_ATTRS = (0o100644 & 0xFFFF) << 16
ZIP_CREATE_SYSTEM_UNIX = 3
SHEBANG = b"#!/usr/bin/env python3\n"

# The zip's own entry point. Written in syntax every Python 3 parses so the version check
# can run and speak on old interpreters instead of dying with a SyntaxError.
BOOTSTRAP = '''# agentrt-proxy: entry point of the single-file build (written by build_zipapp.py).
import sys


def _hermetic_path():
    # The archive must never import the host's copies of its dependencies: drop
    # site-packages, dist-packages and the user site from sys.path (-I does not).
    dropped = []
    user_site = getattr(sys.modules.get("site"), "USER_SITE", None)
    for entry in list(sys.path):
        parts = entry.replace("\\\\", "/").split("/")
        if "site-packages" in parts or "dist-packages" in parts or entry == user_site:
            sys.path.remove(entry)
            dropped.append(entry)
    # A .pth file may already have imported one of our vendored packages from there.
    for name in list(sys.modules):
        if name.partition(".")[0] in _VENDORED:
            origin = getattr(sys.modules[name], "__file__", None) or ""
            if any(origin.startswith(d) for d in dropped):
                del sys.modules[name]


_VENDORED = frozenset(%(vendored)r)
_hermetic_path()

if sys.version_info < %(min_python)r:
    sys.stderr.write(
        "agentrt-proxy: needs Python %(min_text)s or newer, but this is Python %%d.%%d.%%d (%%s)\\n"
        %% (sys.version_info[0], sys.version_info[1], sys.version_info[2], sys.executable)
    )
    sys.exit(1)

from agentrt_proxy.cli.main import main  # noqa: E402

sys.exit(main())
'''


def fail(message: str) -> None:
    """Stop the build with one line on stderr."""
    sys.stderr.write(f"build_zipapp.py: {message}\n")
    raise SystemExit(1)


def staging_key(requirements: Path) -> str:
    """What the staged folder was made from; a change to any of it restages."""
    digest = hashlib.sha256()
    for part in (STAGE_RECIPE, RPDS_SHIM, " ".join(PIP_TARGET_FLAGS)):
        digest.update(part.encode() + b"\0")
    digest.update(requirements.read_bytes())
    return digest.hexdigest()


def stage_dependencies(requirements: Path, stage: Path, *, force: bool = False) -> Path:
    """Install the pinned dependencies into `stage`, or reuse it if it is current."""
    key = staging_key(requirements)
    stamp = stage / STAMP_NAME
    if not force and stamp.is_file() and stamp.read_text().strip() == key:
        return stage
    # Stage beside the final folder and rename it into place, so an interrupted run never
    # leaves a half-filled folder that a later run would take as current.
    partial = stage.with_name(stage.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    command = [sys.executable, "-m", "pip", "install", *PIP_TARGET_FLAGS,
               "--target", str(partial), "--requirement", str(requirements)]
    result = subprocess.run(command, stdin=subprocess.DEVNULL, check=False)
    if result.returncode != 0:
        fail(f"pip could not stage {requirements.name} (exit {result.returncode}); see above")
    rpds = partial / "rpds"
    if rpds.exists():
        fail("a real `rpds` package was staged; it must not be vendored (compiled extension)")
    rpds.mkdir()
    (rpds / "__init__.py").write_text(RPDS_SHIM)
    (partial / STAMP_NAME).write_text(key + "\n")
    shutil.rmtree(stage, ignore_errors=True)
    partial.rename(stage)
    return stage


def is_dropped(relative: Path) -> bool:
    """True for files that never go into the archive."""
    if any(part in DROP_DIR_NAMES for part in relative.parts[:-1]):
        return True
    name = relative.name
    return name in DROP_FILE_NAMES or name.endswith(DROP_SUFFIXES) or name.startswith(".")


def walk(base: Path, prefix: str = "") -> Iterator[tuple[str, Path]]:
    """(archive name, file) for every file under `base` that belongs in the archive."""
    for path in base.rglob("*"):
        relative = path.relative_to(base)
        if path.is_dir() or is_dropped(relative):
            continue
        if path.name.endswith(NATIVE_SUFFIXES):
            fail(f"native extension {path} cannot be imported from a zip")
        yield prefix + relative.as_posix(), path


# jsonschema_specifications finds its schemas with importlib.resources, which in a zip imports
# zipfile and the resource readers (0.9 MiB of the proxy's memory, ~5 ms of its start). Its
# _core.py is replaced by one that reads the same files, in the same order, with the zip
# importer's own get_data; the list is written at build time (docs/building.md).
SPECIFICATIONS_CORE = "jsonschema_specifications/_core.py"
SPECIFICATIONS_SCHEMAS = "jsonschema_specifications/schemas/"
SPECIFICATIONS_SHIM = '''"""The official schemas, read from the archive (written by build_zipapp.py)."""

import json
import pkgutil

from referencing import Resource

_NAMES = %(names)r


def _schemas():
    """All schemas we ship."""
    for name in _NAMES:
        yield Resource.from_contents(json.loads(pkgutil.get_data(__package__, name).decode("utf-8")))
'''


def specifications_core(files: dict[str, bytes]) -> bytes:
    """The replacement for jsonschema_specifications/_core.py, naming every schema ``files`` holds."""
    prefix = SPECIFICATIONS_SCHEMAS.split("/", 1)[0] + "/"
    names = sorted(name[len(prefix):] for name in files if name.startswith(SPECIFICATIONS_SCHEMAS))
    if not names:
        fail(f"no schemas under {SPECIFICATIONS_SCHEMAS} in the staged dependencies")
    return (SPECIFICATIONS_SHIM % {"names": tuple(names)}).encode()


def metadata_headers(data: bytes) -> bytes:
    """A dist-info METADATA without its body: the headers (name, version, licence) stay, the
    long description (the project's README, ~25 KiB of the archive) goes; nothing reads it."""
    return data.replace(b"\r\n", b"\n").split(b"\n\n", 1)[0].rstrip(b"\n") + b"\n"


def collect_files(package_dir: Path, stage: Path) -> dict[str, bytes]:
    """Every file of the archive, by archive name, excluding the bootstrap."""
    files: dict[str, bytes] = {}
    for name, path in walk(stage):
        data = path.read_bytes()
        files[name] = metadata_headers(data) if name.endswith(".dist-info/METADATA") else data
    if SPECIFICATIONS_CORE in files:
        files[SPECIFICATIONS_CORE] = specifications_core(files)
    for name, path in walk(package_dir, prefix=package_dir.name + "/"):
        files[name] = path.read_bytes()
    return files


def vendored_top_level(stage: Path) -> list[str]:
    """Import names that the archive provides from the staging (for the bootstrap)."""
    names = set()
    for path in stage.iterdir():
        if path.name.endswith(".dist-info") or path.name.startswith(".") or path.name == "bin":
            continue
        names.add(path.name[:-3] if path.name.endswith(".py") else path.name)
    return sorted(names)


def bootstrap_source(vendored: list[str]) -> bytes:
    """The archive's __main__.py."""
    text = BOOTSTRAP % {
        "vendored": tuple(vendored),
        "min_python": MIN_PYTHON,
        "min_text": ".".join(map(str, MIN_PYTHON)),
    }
    return text.encode()


class _DropDocstrings(ast.NodeTransformer):
    """Leaves out the docstrings of modules and functions (nothing reads them at run time;
    the .py beside each .pyc keeps them). Class docstrings stay: a dataclass without one
    computes one from ``inspect.signature`` at import, which would slow the start."""

    def visit_Module(self, node: ast.Module) -> ast.Module:
        self.generic_visit(node)
        node.body = _without_docstring(node.body)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        self.generic_visit(node)
        node.body = _without_docstring(node.body)
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AsyncFunctionDef:
        self.generic_visit(node)
        node.body = _without_docstring(node.body)
        return node


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return body
    return body[1:] or [ast.copy_location(ast.Pass(), first)]  # a body of only a docstring


def compile_unchecked_pyc(name: str, source: bytes) -> bytes:
    """A PEP 552 unchecked-hash .pyc for `source`, stable across builds.

    Unchecked: zipimport never compares it with the source (both come from one build).
    The code object's file name is the archive-relative name, so the build folder does
    not leak into the bytes. Smaller than a plain compile (about a third, so it also
    unmarshals faster at start): no docstrings of modules and functions, and no column
    ranges (the builder runs with PYTHONNODEBUGRANGES=1; a traceback then shows lines
    without the ^^^ under the failing expression).
    """
    tree = _DropDocstrings().visit(ast.parse(source, name))
    code = compile(tree, name, "exec", dont_inherit=True, optimize=0)
    flags = (0b01).to_bytes(4, "little")  # hash-based, check_source off
    return importlib.util.MAGIC_NUMBER + flags + importlib.util.source_hash(source) + marshal.dumps(code)


def add_bytecode(files: dict[str, bytes]) -> None:
    """Add a legacy-layout `mod.pyc` beside every `mod.py` (zipimport's lookup)."""
    for name in [n for n in files if n.endswith(".py")]:
        files[name + "c"] = compile_unchecked_pyc(name, files[name])


def write_archive(files: dict[str, bytes], output: Path) -> None:
    """Write the zip with fixed metadata and sorted entries, then move it into place."""
    buffer = io.BytesIO()
    buffer.write(SHEBANG)
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
            info.create_system = ZIP_CREATE_SYSTEM_UNIX
            info.external_attr = ZIP_FILE_ATTRS
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, files[name], compresslevel=9)
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")
    partial.write_bytes(buffer.getvalue())
    partial.chmod(0o755)  # runnable as ./agentrt-proxy.pyz thanks to the shebang
    partial.replace(output)


# The interpreter settings the byte-code is compiled under; the builder re-runs itself with
# them. Marshalled frozenset constants follow string hashing order: the seed is fixed. Column
# ranges (Python 3.11+) are left out of the code objects: ~430 KiB of the archive.
COMPILE_ENV = {"PYTHONHASHSEED": "0", "PYTHONNODEBUGRANGES": "1"}


def compile_settings_fixed() -> bool:
    return all(os.environ.get(name) == value for name, value in COMPILE_ENV.items())


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Build the single-file agentrt-proxy.pyz.")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT,
                        help="where to write the archive (default: dist/agentrt-proxy.pyz)")
    parser.add_argument("--no-pyc", dest="pyc", action="store_false",
                        help="ship sources only (smaller; slower start-up on the building Python)")
    parser.add_argument("--restage", action="store_true",
                        help="reinstall the vendored dependencies even if .stage/ is current")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.pyc and not compile_settings_fixed():
        # Rerun with fixed settings rather than compile bytes that vary per run.
        env = {**os.environ, **COMPILE_ENV}
        rerun = [sys.executable, str(Path(__file__).resolve()), *(sys.argv[1:] if argv is None else argv)]
        return subprocess.run(rerun, env=env, check=False).returncode
    package_dir = ROOT / PACKAGE
    entry = package_dir / "cli" / "main.py"
    if not entry.is_file():
        fail(f"{entry} is missing: nothing to run")
    stage = stage_dependencies(VENDOR_REQUIREMENTS, STAGE_DIR, force=args.restage)
    files = collect_files(package_dir, stage)
    if args.pyc:
        add_bytecode(files)
    files["__main__.py"] = bootstrap_source(vendored_top_level(stage))
    output = args.output.resolve()
    write_archive(files, output)
    size_kib = output.stat().st_size / 1024
    print(f"wrote {output} ({size_kib:.0f} KiB, {len(files)} entries)")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
