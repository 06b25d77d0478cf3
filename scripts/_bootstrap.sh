# Shared setup for scripts/test, scripts/demo and scripts/bench (sourced, not run).
# Installs what the project needs on a fresh Debian/Ubuntu machine; elsewhere says what to install.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"

say() { printf '[mail-imap-mcp] %s\n' "$*" >&2; }

find_python() {
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

apt_install() {
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "missing: $*; install it with your package manager (Debian/Ubuntu: apt-get install $*)"
    exit 1
  fi
  say "installing $* with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq "$@" >/dev/null
}

# The `dovecot` binary alone is not enough: it comes with dovecot-core, and the IMAP service itself
# (dovecot-imapd) can be missing, e.g. after another IMAP server package replaced it.
DOVECOT_IMAP_SERVICE=/usr/lib/dovecot/imap

ensure_dovecot() {
  if ! command -v dovecot >/dev/null 2>&1 && [ ! -x /usr/sbin/dovecot ] || [ ! -x "$DOVECOT_IMAP_SERVICE" ]; then
    apt_install dovecot-imapd
  fi
}

ensure_venv() {
  local python stamp want
  if ! python="$(find_python)"; then
    apt_install python3 python3-venv
    python="$(find_python)" || { say "Python >= 3.11 is required"; exit 1; }
  fi
  if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
    apt_install python3-venv
  fi
  stamp="$VENV/.installed"
  want="$(cat "$ROOT/requirements.lock" "$ROOT/pyproject.toml" | cksum)"
  if [ -x "$PY" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  say "setting up $VENV (Python deps from requirements.lock)"
  [ -x "$PY" ] || "$python" -m venv "$VENV"
  "$PY" -m pip install -q --disable-pip-version-check --require-hashes -r "$ROOT/requirements.lock"
  "$PY" -m pip install -q --disable-pip-version-check --no-deps -e "$ROOT"
  printf '%s' "$want" >"$stamp"
}
