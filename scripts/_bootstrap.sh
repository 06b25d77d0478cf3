# Shared setup for scripts/test, scripts/demo and scripts/bench (sourced, not run).
# Installs what the project needs on a fresh Debian/Ubuntu machine; elsewhere says what to install.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"

say() { printf '[mail-imap-mcp] %s\n' "$*" >&2; }

# Sets the variable $1 from the setting $2 (whole seconds), or to the default $3 where it is unset or empty.
# Anything else ends the setup naming the setting, where it would otherwise fail later in another tool's
# words (coreutils' timeout: "invalid time interval"; a shell's "integer expression expected").
seconds_setting() {
  local value="${!2:-$3}"
  case "$value" in
    *[!0-9]*) say "$2 must be a whole number of seconds, not '$value'"; exit 2 ;;
  esac
  printf -v "$1" '%s' "$value"
}

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

# Every apt-get these scripts run waits for apt's locks rather than failing at once when another apt-get
# holds one (unattended upgrades on a fresh machine do), up to MIM_APT_LOCK_WAIT_S seconds, and says what
# it waits for. apt's own -o DPkg::Lock::Timeout covers the dpkg lock; apt-get update (apt 2.6) ignores
# it for the lists lock, hence the wait here, for every lock, before each run.
seconds_setting APT_LOCK_WAIT_S MIM_APT_LOCK_WAIT_S 900
APT_LOCKS=(/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock)

# The process holding one of APT_LOCKS, if any (from /proc/locks: apt's locks are fcntl locks, which
# flock(1) cannot see).
apt_lock_holder() {
  local lock inode
  for lock in "${APT_LOCKS[@]}"; do
    [ -e "$lock" ] || continue
    inode="$(stat -c %i "$lock")"
    # "N: POSIX ADVISORY WRITE <pid> <major>:<minor>:<inode> ...", the waiters' lines marked "->".
    awk -v inode="$inode" '$2 != "->" { n = split($6, id, ":"); if (id[n] == inode) { print $5; exit } }' \
      /proc/locks 2>/dev/null | grep . && return 0
  done
  return 0
}

apt_get() {
  local holder waited=0 status errors
  errors="$(mktemp)"
  while :; do
    while holder="$(apt_lock_holder)" && [ -n "$holder" ]; do
      if [ "$waited" -eq 0 ]; then
        say "apt-get $1 waits for apt's lock, held by process $holder ($(tr '\0' ' ' <"/proc/$holder/cmdline" 2>/dev/null | cut -c1-100)), up to $APT_LOCK_WAIT_S s (MIM_APT_LOCK_WAIT_S)"
      fi
      if [ "$waited" -ge "$APT_LOCK_WAIT_S" ]; then
        say "apt's lock is still held by process $holder after $APT_LOCK_WAIT_S s: giving up on apt-get $1"
        rm -f "$errors"
        return 1
      fi
      sleep 1
      waited=$((waited + 1))
    done
    status=0
    apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT_S" "$@" 2>"$errors" || status=$?
    # Two runs that found the locks free at once (two fresh clones' tests): the one that lost fails at
    # once on the lists lock, which apt-get update takes without a timeout. It waits and runs again.
    if [ "$status" -ne 0 ] && grep -q "Could not get lock\|Unable to lock" "$errors" &&
      [ "$waited" -lt "$APT_LOCK_WAIT_S" ]; then
      [ "$waited" -gt 0 ] || say "apt-get $1 found apt's lock taken as it started: waits and runs again, up to $APT_LOCK_WAIT_S s (MIM_APT_LOCK_WAIT_S)"
      sleep 1
      waited=$((waited + 1))
      continue
    fi
    cat "$errors" >&2
    rm -f "$errors"
    return "$status"
  done
}

apt_install() {
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "missing: $*; install it with your package manager (Debian/Ubuntu: apt-get install $*)"
    exit 1
  fi
  say "installing $* with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt_get update -qq >/dev/null
  apt_get install -y -qq "$@" >/dev/null
}

# apt_install with the packages' system services kept from starting (a policy-rc.d refusing them, there
# for the install alone unless one was there already): the tests start the servers they need themselves.
apt_install_without_services() {
  local added_policy=""
  if [ "$(id -u)" -eq 0 ] && [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    added_policy=1
  fi
  apt_install "$@"
  [ -z "$added_policy" ] || rm -f /usr/sbin/policy-rc.d
}

# The `dovecot` binary alone is not enough: it comes with dovecot-core, and the IMAP service itself
# (dovecot-imapd) can be missing, e.g. after another IMAP server package replaced it.
DOVECOT_IMAP_SERVICE="${DOVECOT_IMAP_SERVICE:-/usr/lib/dovecot/imap}"

ensure_dovecot() {
  if ! command -v dovecot >/dev/null 2>&1 && [ ! -x /usr/sbin/dovecot ] || [ ! -x "$DOVECOT_IMAP_SERVICE" ]; then
    apt_install dovecot-imapd
  fi
}

# A folder of its own for the temporary files of a script that starts IMAP servers ($1 names the script),
# which the servers' own users can pass through: run as root, Dovecot's mail user (nobody) cannot enter a
# private TMPDIR (mode 0700, e.g. under root's home), and every mailbox in it fails. Printed; the caller
# removes it.
traversable_tmpdir() {
  local dir
  dir="$(mktemp -d "/tmp/mail-imap-mcp-$1.XXXXXX")"
  chmod 0711 "$dir" # entered by the servers' users, listed by nobody else
  printf '%s\n' "$dir"
}

# The sending tests' chain (tests/support/servers/submission.py): Dovecot's submission service relaying to Exim
# (Debian's MTA), which delivers by LMTP into the test Dovecot. All started by the tests on loopback with
# their own configuration; the packages' system services are kept from starting.
ensure_submission_chain() {
  local missing=()
  [ -x /usr/lib/dovecot/submission ] || missing+=(dovecot-submissiond)
  [ -x /usr/lib/dovecot/lmtp ] || missing+=(dovecot-lmtpd)
  command -v exim4 >/dev/null 2>&1 || [ -x /usr/sbin/exim4 ] || missing+=(exim4-daemon-light)
  [ "${#missing[@]}" -eq 0 ] && return 0
  apt_install_without_services "${missing[@]}"
}

# The rules' servers (tests/support/servers/sieve.py): Pigeonhole, Dovecot's Sieve (dovecot-sieve: the
# interpreter, sieve-test, the LMTP plugin), its ManageSieve service (dovecot-managesieved) and LMTP, add-ons of the
# Dovecot already installed, not a second IMAP server. Started by the tests on loopback with their own
# configuration; the packages' system services are kept from starting.
ensure_sieve() {
  local missing=()
  [ -x /usr/lib/dovecot/managesieve ] || missing+=(dovecot-managesieved)
  [ -x /usr/bin/sieve-test ] || missing+=(dovecot-sieve)
  [ -x /usr/lib/dovecot/lmtp ] || missing+=(dovecot-lmtpd) # a rule proven by delivering through LMTP
  [ "${#missing[@]}" -eq 0 ] && return 0
  apt_install_without_services "${missing[@]}"
}

# Redis and HAProxy, for the tests of several instances sharing state behind a load balancer
# (tests/support/servers/redis_server.py, tests/support/servers/haproxy.py): started by the tests on loopback, never
# as system services (the packages' own services are kept from starting).
ensure_team_servers() {
  local missing=()
  command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || missing+=(redis-server)
  command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing+=(haproxy)
  [ "${#missing[@]}" -eq 0 ] && return 0
  apt_install_without_services "${missing[@]}"
}

# A real browser for the built-in sign-in's browser step (tests/support/clients/chromium.py): Debian's Chromium,
# headless, driven through its chromedriver by selenium (the dev lock).
ensure_chromium() {
  local missing=()
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
  [ "${#missing[@]}" -eq 0 ] || apt_install --no-install-recommends "${missing[@]}"
}

# strace, which records every connect of a child process (tests/unit/test_meaning_offline.py: reading the
# text model of search by meaning attempts none, Rust code included, which no Python hook sees).
ensure_strace() {
  command -v strace >/dev/null 2>&1 || apt_install --no-install-recommends strace
}

# PostgreSQL, for the index in PostgreSQL (tests/support/servers/postgres.py): a throwaway cluster the tests make
# with initdb and run on loopback (postgres in the foreground, what pg_ctl starts) as an unprivileged
# user; never the system service (the package's own cluster and service are kept from being made).
postgres_bin() {
  local found
  found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  [ -n "$found" ] && [ -x "$found/initdb" ] && printf '%s\n' "$found"
}

ensure_postgres() {
  postgres_bin >/dev/null && return 0
  local added_policy=""
  if [ "$(id -u)" -eq 0 ] && [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    added_policy=1
  fi
  mkdir -p /etc/postgresql-common
  [ -e /etc/postgresql-common/createcluster.conf ] ||
    printf 'create_main_cluster = false\n' >/etc/postgresql-common/createcluster.conf
  apt_install --no-install-recommends postgresql
  [ -z "$added_policy" ] || rm -f /usr/sbin/policy-rc.d
}

# The tests' keychain: a real Secret Service, GNOME Keyring's daemon on a session bus of its own
# (tests/support/servers/secret_service.py runs it under dbus-run-session); never a system service.
ensure_secret_service() {
  local missing=()
  command -v gnome-keyring-daemon >/dev/null 2>&1 || missing+=(gnome-keyring)
  command -v dbus-run-session >/dev/null 2>&1 || missing+=(dbus-daemon dbus-bin)
  [ "${#missing[@]}" -eq 0 ] || apt_install --no-install-recommends "${missing[@]}"
}

# What the machine's clones of the project can share: what npm installed for one lockfile, the IMAP servers
# unpacked for one package version, the uv that installs the Python deps. Each is kept under a name its inputs decide and never changed after,
# and a clone takes it as hard links (cp -al: no data copied) where it would install it again: from a
# fresh clone, the four npm installs took 15.7 CPU-seconds and unpacking the servers 5.0; linking them,
# 0.3. MIM_SHARED_CACHE names another place; set empty, nothing is shared (each clone installs its own).
if [ -n "${MIM_SHARED_CACHE+set}" ]; then
  SHARED_CACHE="$MIM_SHARED_CACHE"
elif [ -n "${XDG_CACHE_HOME:-}" ] || [ -n "${HOME:-}" ]; then
  SHARED_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/mail-imap-mcp"
else
  SHARED_CACHE=""
fi

# Makes $2 a copy of the directory $1 in hard links, whole or not at all; fails where links cannot be made
# (another file system), leaving $2 as it was.
_link_copy() {
  local from="$1" to="$2" partial="$2.linking.$$"
  rm -rf "$partial"
  if mkdir -p "$(dirname "$to")" && cp -al "$from" "$partial" 2>/dev/null; then
    rm -rf "$to" && mv -T "$partial" "$to" && return 0
  fi
  rm -rf "$partial"
  return 1
}

# Keeps the finished directory $1 in the shared cache as $2 (hard links), where nothing is there yet; a
# failure only means the next clone installs again.
_share() {
  [ -n "$SHARED_CACHE" ] && [ ! -e "$2" ] || return 0
  _link_copy "$1" "$2" 2>/dev/null || true
}

# Hypothesis's caches of what every test process reads as it starts: the constants of each module of the
# checkout (kept by the hash of its source) and the Unicode categories (by the Unicode version). In a
# clone that has none yet, links them to the shared cache, where another clone made most of them
# (making them took 3.6 CPU-seconds, reading them 0.3: tests/support/run/rewrite_ahead.py); the
# examples Hypothesis keeps (its database) stay the clone's own. Succeeds when it linked them.
link_hypothesis_caches() {
  local dir="$ROOT/.hypothesis" version shared
  [ -n "$SHARED_CACHE" ] && [ ! -e "$dir/constants" ] && [ ! -L "$dir/constants" ] || return 1
  version="$(awk '/^hypothesis==/ { sub(/^hypothesis==/, ""); print $1; exit }' "$ROOT/requirements.lock")"
  shared="$SHARED_CACHE/hypothesis-$version"
  mkdir -p "$shared/constants" "$shared/unicode_data" "$dir" 2>/dev/null &&
    ln -s "$shared/constants" "$dir/constants" && ln -s "$shared/unicode_data" "$dir/unicode_data"
}

# A Python >= 3.11 with venv, installed with apt-get when missing; sets SYSTEM_PYTHON. Separate from
# ensure_venv so that apt-get is done before other setup runs beside ensure_venv (see scripts/test).
ensure_python() {
  [ -z "${SYSTEM_PYTHON:-}" ] || return 0
  if ! SYSTEM_PYTHON="$(find_python)"; then
    apt_install python3 python3-venv
    SYSTEM_PYTHON="$(find_python)" || { say "Python >= 3.11 is required"; exit 1; }
  fi
  if ! "$SYSTEM_PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
    apt_install python3-venv
  fi
}

ensure_venv() {
  local python stamp want uv_pin pip_source pip uv uv_shared=""
  ensure_python
  python="$SYSTEM_PYTHON"
  stamp="$VENV/.installed"
  want="$(cat "$ROOT/requirements.lock" "$ROOT/pyproject.toml" | cksum)"
  if [ -x "$PY" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  say "setting up $VENV (Python deps from requirements.lock)"
  # pip installs the lock's own uv (hash-checked), which installs the rest: a minute of CPU with pip,
  # a second with uv. The virtualenv is made without pip (venv takes 4-7 s to install it), and the pip
  # that runs is the system Python's own (pip --python), else the wheel ensurepip installs from, run as
  # it is (4 s: a zip keeps no bytecode), else the pip venv installs.
  # Where another clone's pip installed that uv already, it is run from the shared cache (it installs
  # itself into the virtualenv with the rest of the lock): pip's 2.1 CPU-seconds saved.
  uv_pin="$(mktemp)"
  awk '/^uv==/ { keep = 1; print; next } keep && /^ / { print; next } { keep = 0 }' \
    "$ROOT/requirements.lock" >"$uv_pin"
  [ -z "$SHARED_CACHE" ] || uv_shared="$SHARED_CACHE/uv/$(cksum <"$uv_pin" | tr ' ' '-')"
  if [ -n "$uv_shared" ] && [ -x "$uv_shared/uv" ]; then
    [ -x "$PY" ] || "$python" -m venv --without-pip "$VENV"
    uv="$uv_shared/uv"
  else
    pip_source="$("$python" -c "$_FIND_PIP")"
    if [ -z "$pip_source" ]; then
      [ -x "$PY" ] || "$python" -m venv "$VENV"
      pip=("$PY" -m pip)
    else
      [ -x "$PY" ] || "$python" -m venv --without-pip "$VENV"
      if [ "$pip_source" = system ]; then pip=("$python" -m pip --python "$PY"); else pip=("$PY" "$pip_source/pip"); fi
    fi
    "${pip[@]}" install -q --disable-pip-version-check --no-deps --require-hashes -r "$uv_pin"
    uv="$VENV/bin/uv"
    # A copy, not a link: the virtualenv's own may be replaced in place.
    [ -z "$uv_shared" ] || [ -e "$uv_shared/uv" ] || {
      mkdir -p "$uv_shared" && cp "$uv" "$uv_shared/uv.$$" && mv -f "$uv_shared/uv.$$" "$uv_shared/uv"
    } 2>/dev/null || rm -f "$uv_shared/uv.$$"
  fi
  rm -f "$uv_pin"
  "$uv" pip install -q --python "$PY" --require-hashes -r "$ROOT/requirements.lock"
  "$uv" pip install -q --python "$PY" --no-deps -e "$ROOT"
  # The bytecode of what the tests and the server import, compiled here once: processes that may not
  # write it (PYTHONDONTWRITEBYTECODE) would compile every module they import, each time, and the test
  # workers starting together would all compile the same modules. The tools only scripts/bench and the
  # type check use (numpy, matplotlib, mypy: 7 of the 13 s compiling everything took), and the packages
  # of which a few tests import a few modules (selenium: 65 of its 326; pipx, run by one test) or none
  # (huggingface_hub, fsspec: what WordLlama's wheel brings along) compile on first use. In one process:
  # a process per core took 9.4-10.5 CPU-seconds, 7.8-8.8 without those packages, one process 7.0-7.3.
  "$PY" -m compileall -q -x "$_NOT_PRECOMPILED" "$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null
  printf '%s' "$want" >"$stamp"
}

# Prints where a pip for ensure_venv comes from: "system" (the running Python's pip, new enough for
# --python), else the wheel ensurepip installs from (CPython's bundled one, or Debian's), else nothing.
_FIND_PIP='
import glob, os
try:
    import pip
    if tuple(int(part) for part in pip.__version__.split(".")[:2]) >= (22, 3):
        raise SystemExit(print("system"))
except ImportError:
    pass
import ensurepip
bundled = os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", "pip-*.whl")
wheels = sorted(glob.glob(bundled)) or sorted(glob.glob("/usr/share/python-wheels/pip-*.whl"))
print(wheels[-1] if wheels else "")
'
_NOT_PRECOMPILED='/site-packages/(numpy|matplotlib|mpl_toolkits|fontTools|contourpy|kiwisolver|mypy|mypyc|pygments|selenium|huggingface_hub|fsspec|pipx)/'

# Cyrus IMAP and Courier-IMAP beside Dovecot, for tests that run against several IMAP servers
# (tests/support/servers/cyrus.py, tests/support/servers/courier.py). Their server packages, like dovecot-imapd, provide
# the virtual package imap-server and conflict with each other: `apt-get install cyrus-imapd` or
# `courier-imap` REMOVES dovecot-imapd. So only their non-conflicting dependencies are installed (never
# anything that removes a package: checked with a simulated install first), and the server packages
# themselves are unpacked with `dpkg-deb -x` into $IMAP_SERVERS_DIR/<package>/, whose `.version` file
# names the dependency version they were unpacked for. Fast (no apt) when everything is in place.
IMAP_SERVERS_DIR="${MIM_IMAP_SERVERS_DIR:-$ROOT/.cache/imap-servers}"
# gcc builds the rand() the Cyrus instances preload (tests/support/servers/cyrus_rand.c).
IMAP_MATRIX_DEPS=(cyrus-common sasl2-bin courier-base courier-authdaemon courier-authlib-userdb
  libcourier-unicode4 libgamin0 libgdbm6 libidn12 mount gcc libc6-dev)
# "<unpacked package> <installed package it must match> <file it must contain>"
IMAP_MATRIX_UNPACKED=("cyrus-imapd cyrus-common usr/lib/cyrus/bin/imapd"
  "courier-imap courier-base usr/bin/imapd")
IMAP_MATRIX_TOOLS=(/usr/lib/cyrus/bin/master /usr/sbin/saslpasswd2 /usr/sbin/couriertcpd /usr/bin/couriertls
  /usr/lib/courier/courier-authlib/authdaemond /usr/lib/courier-authlib/libauthuserdb.so /usr/sbin/makeuserdb
  /usr/bin/unshare /bin/mount /usr/bin/cc /usr/include/stdlib.h)

_imap_matrix_ready() {
  local tool entry pkg dep file
  for tool in "${IMAP_MATRIX_TOOLS[@]}"; do
    [ -e "$tool" ] || return 1
  done
  for entry in "${IMAP_MATRIX_UNPACKED[@]}"; do
    read -r pkg dep file <<<"$entry"
    [ -e "$IMAP_SERVERS_DIR/$pkg/$file" ] || return 1
    [ "$(cat "$IMAP_SERVERS_DIR/$pkg/.version" 2>/dev/null)" = "$(dpkg-query -W -f='${Version}' "$dep" 2>/dev/null)" ] ||
      return 1
  done
}

# The shared cache's copy of the unpacked package $1 for the installed version $2 (see SHARED_CACHE).
_shared_imap_server() {
  printf '%s\n' "$SHARED_CACHE/imap-servers/$1-$2"
}

# Links into IMAP_SERVERS_DIR the unpacked servers the shared cache has for the installed versions, and
# keeps there those unpacked here that it lacks; succeeds when everything is then in place.
_imap_servers_shared() {
  [ -n "$SHARED_CACHE" ] || { _imap_matrix_ready; return; }
  local entry pkg dep file version shared
  for entry in "${IMAP_MATRIX_UNPACKED[@]}"; do
    read -r pkg dep file <<<"$entry"
    version="$(dpkg-query -W -f='${Version}' "$dep" 2>/dev/null)" || continue
    shared="$(_shared_imap_server "$pkg" "$version")"
    if [ -e "$IMAP_SERVERS_DIR/$pkg/$file" ] && [ "$(cat "$IMAP_SERVERS_DIR/$pkg/.version" 2>/dev/null)" = "$version" ]; then
      _share "$IMAP_SERVERS_DIR/$pkg" "$shared"
    elif [ -e "$shared/$file" ] && [ "$(cat "$shared/.version" 2>/dev/null)" = "$version" ]; then
      _link_copy "$shared" "$IMAP_SERVERS_DIR/$pkg" || true
    fi
  done
  _imap_matrix_ready
}

ensure_imap_matrix() {
  local entry pkg dep file version tmp simulated depends added_policy=""
  _imap_servers_shared && return 0
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
    say "Cyrus/Courier test servers missing: run scripts/test as root on Debian/Ubuntu once"
    say "(installs ${IMAP_MATRIX_DEPS[*]} and unpacks cyrus-imapd and courier-imap into $IMAP_SERVERS_DIR)"
    exit 1
  fi
  say "installing Cyrus/Courier test server dependencies (apt-get) and unpacking the servers into $IMAP_SERVERS_DIR"
  export DEBIAN_FRONTEND=noninteractive
  apt_get update -qq >/dev/null
  # A plain install would pull in recommended cyrus-imapd, which replaces dovecot-imapd.
  simulated="$(apt_get install -s --no-install-recommends "${IMAP_MATRIX_DEPS[@]}")" || {
    say "apt-get cannot install ${IMAP_MATRIX_DEPS[*]}"
    exit 1
  }
  if grep '^Remv ' <<<"$simulated" >&2; then
    say "refusing: installing ${IMAP_MATRIX_DEPS[*]} would remove the packages above"
    exit 1
  fi
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    # Keep the packages' system services (exim, cyrus, authdaemond) from starting.
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    added_policy=1
  fi
  if ! apt_get install -y -qq --no-install-recommends "${IMAP_MATRIX_DEPS[@]}" >/dev/null; then
    [ -z "$added_policy" ] || rm -f /usr/sbin/policy-rc.d
    say "apt-get install ${IMAP_MATRIX_DEPS[*]} failed"
    exit 1
  fi
  [ -z "$added_policy" ] || rm -f /usr/sbin/policy-rc.d
  tmp="$(mktemp -d)"
  chmod 755 "$tmp"
  ! getent passwd _apt >/dev/null || chown _apt "$tmp" # apt-get download runs as _apt
  mkdir -p "$IMAP_SERVERS_DIR"
  for entry in "${IMAP_MATRIX_UNPACKED[@]}"; do
    read -r pkg dep file <<<"$entry"
    version="$(dpkg-query -W -f='${Version}' "$dep")"
    rm -f "$tmp"/*.deb
    # The unpacked binaries must match the installed libraries and tools: both packages depend on
    # exactly one version of $dep, which the apt-get install above brought to the candidate version.
    if ! (cd "$tmp" && apt_get download -qq "$pkg" >/dev/null 2>&1) ||
      ! depends="$(dpkg-deb -f "$tmp"/"$pkg"_*.deb Depends)" || [[ "$depends" != *"$dep (= $version)"* ]]; then
      say "could not download $pkg for the installed $dep $version"
      rm -rf "$tmp"
      exit 1
    fi
    rm -rf "$IMAP_SERVERS_DIR/$pkg"
    dpkg-deb -x "$tmp"/"$pkg"_*.deb "$IMAP_SERVERS_DIR/$pkg"
    printf '%s' "$version" >"$IMAP_SERVERS_DIR/$pkg/.version"
    _share "$IMAP_SERVERS_DIR/$pkg" "$(_shared_imap_server "$pkg" "$version")"
  done
  rm -rf "$tmp"
  _imap_matrix_ready || { say "Cyrus/Courier test servers still incomplete after installing"; exit 1; }
}

# `npm ci` of a committed package.json + package-lock.json ($2) into a project-local directory ($1), never
# global, again only when the lockfile changed; $4, if given, is a command run in $1 after it (a package's
# own install script). Without node the tests that need it skip themselves; with node, a failed install
# stops the run (such a test must not silently skip). The result is shared (see SHARED_CACHE).
# How long one `npm ci` may take, and how often it is tried. A download from the registry can stall with
# its connection open: npm then waits with no end (a run stood 13 minutes in one on 2026-11-28, no byte
# read), where the same install takes seconds from npm's cache and under a minute without it. 0: no limit
# (as coreutils' timeout takes it).
seconds_setting NPM_CI_S MIM_NPM_CI_S 300
NPM_ATTEMPTS=3

_npm_ci_locked() {
  local dir="$1" source="$2" what="$3" after="${4:-}" stamp want shared=""
  command -v node >/dev/null 2>&1 || { say "node not found: $what will be skipped"; return 0; }
  command -v npm >/dev/null 2>&1 || { say "node is installed but npm is not: install npm"; exit 1; }
  stamp="$dir/.installed"
  want="$(cat "$source/package.json" "$source/package-lock.json" | cksum)"
  [ -z "$SHARED_CACHE" ] || shared="$SHARED_CACHE/npm/$(basename "$dir")-${want// /-}"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$dir/node_modules" ]; then
    [ -z "$shared" ] || _share "$dir" "$shared"
    return 0
  fi
  if [ -n "$shared" ]; then
    if [ -f "$shared/.installed" ] && [ "$(cat "$shared/.installed")" = "$want" ] && _link_copy "$shared" "$dir"; then
      return 0
    fi
  fi
  say "installing $what into $dir (npm ci)"
  mkdir -p "$dir"
  cp "$source/package.json" "$source/package-lock.json" "$dir/"
  local attempt status bound=()
  # coreutils' timeout (macOS has none unless installed): without it, npm ci runs unbounded, as before.
  command -v timeout >/dev/null 2>&1 && bound=(timeout "$NPM_CI_S")
  for attempt in $(seq "$NPM_ATTEMPTS"); do
    status=0
    (cd "$dir" && ${bound[@]+"${bound[@]}"} npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null) ||
      status=$?
    [ "$status" = 0 ] && break
    if [ "$status" != 124 ]; then
      say "npm ci failed in $dir"
      exit 1
    fi
    if [ "$attempt" = "$NPM_ATTEMPTS" ]; then
      say "npm ci in $dir did not finish within $NPM_CI_S s, $NPM_ATTEMPTS times (MIM_NPM_CI_S): the registry or the network stalls"
      exit 1
    fi
    say "npm ci in $dir did not finish within $NPM_CI_S s (MIM_NPM_CI_S): a download stalled; trying again ($((attempt + 1)) of $NPM_ATTEMPTS)"
  done
  if [ -n "$after" ] && ! (cd "$dir" && $after); then
    say "$what in $dir: its install script failed"
    exit 1
  fi
  printf '%s' "$want" >"$stamp"
  [ -z "$shared" ] || _share "$dir" "$shared"
}

# The official TypeScript MCP SDK, for the test that drives the HTTP transport with it
# (tests/integration/team/test_http_node.py, tests/node/).
NODE_CLIENT_DIR="$ROOT/.cache/node"

ensure_node_client() {
  _npm_ci_locked "$NODE_CLIENT_DIR" "$ROOT/tests/node" "the TypeScript MCP SDK"
}

# node-oidc-provider, the OAuth 2.0 / OpenID provider the built-in sign-in is tested against on loopback
# (tests/support/servers/oidc_provider.py runs tests/node/oidc-provider/server.mjs with it).
OIDC_PROVIDER_DIR="$ROOT/.cache/oidc-provider"

ensure_oidc_provider() {
  _npm_ci_locked "$OIDC_PROVIDER_DIR" "$ROOT/tests/node/oidc-provider" "node-oidc-provider"
}

# The official MCP Bundle CLI (@anthropic-ai/mcpb), which scripts/mcpb validates and packs the bundle
# with (packaging/mcpb/; tests/integration/bundle/test_bundle.py builds one).
MCPB_CLI_DIR="$ROOT/.cache/mcpb"

ensure_mcpb_cli() {
  _npm_ci_locked "$MCPB_CLI_DIR" "$ROOT/packaging/mcpb" "the MCP Bundle CLI"
}

# The Claude Code CLI (@anthropic-ai/claude-code), which runs the commands `mail-imap-mcp setup` prints for
# it (tests/integration/setup/test_setup_claude_code.py). Its package is a placeholder until its own postinstall
# copies the platform's native binary over it: run here, that package's only, as npm ci runs no scripts.
CLAUDE_CLI_DIR="$ROOT/.cache/claude-code"

_claude_postinstall() {
  (cd node_modules/@anthropic-ai/claude-code && node install.cjs >/dev/null)
}

ensure_claude_cli() {
  local package="$CLAUDE_CLI_DIR/node_modules/@anthropic-ai/claude-code"
  _npm_ci_locked "$CLAUDE_CLI_DIR" "$ROOT/tests/node/claude-code" "the Claude Code CLI" _claude_postinstall
  command -v node >/dev/null 2>&1 || return 0
  "$package/bin/claude.exe" --version >/dev/null 2>&1 && return 0
  if ! (cd "$package" && node install.cjs >/dev/null) || ! "$package/bin/claude.exe" --version >/dev/null 2>&1; then
    say "the Claude Code CLI in $CLAUDE_CLI_DIR does not run (its postinstall failed)"
    exit 1
  fi
}
