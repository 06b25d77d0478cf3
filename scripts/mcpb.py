"""Build the MCP Bundle (``dist/mail-imap-mcp-<version>.mcpb``) and the MCP Registry's ``server.json``.

``scripts/mcpb`` runs this in the project's virtualenv, with the official bundle CLI (``@anthropic-ai/mcpb``,
pinned in packaging/mcpb/package-lock.json) installed into .cache/mcpb/. The bundle is of the ``uv``
server type (manifest 0.4): it holds the project's wheel, a pyproject.toml that depends on it with the
versions of requirements-runtime.lock as constraints, and the uv.lock resolved from them for every
platform (hash-checked), so the host's uv installs exactly the tested dependencies, compiled ones
included, on the user's machine; docs/bundle.md says why this is chosen over bundled wheels.

Everything the manifest says is generated: the version from pyproject.toml, the tools from the tool
declarations (``mail_imap_mcp.tools.registry.TOOLS``), the form from ``mail_imap_mcp.config.form`` (where the
server reads its labels), each field mapped to the ``MAIL_IMAP_DEFAULT_*`` variable the server already reads
(an empty field is unset there).

    scripts/mcpb                      build, validate and pack into dist/
    scripts/mcpb --out DIR            into DIR instead
    scripts/mcpb --server-json        rewrite server.json from pyproject.toml (the PyPI package)
    scripts/mcpb --server-json --bundle dist/mail-imap-mcp-<version>.mcpb
                                      the same with the release's bundle and its sha256
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging" / "mcpb"
MCPB_CLI = ROOT / ".cache" / "mcpb" / "node_modules" / ".bin" / "mcpb"
SERVER_JSON = ROOT / "server.json"
NAME = "mail-imap-mcp"
#: The name the MCP Registry lists the server under (its namespace is the publisher's, checked on publish).
REGISTRY_NAME = "io.github.mail-imap-mcp/mail-imap-mcp"
#: Where a release's bundle is downloaded from (the registry's entry names it with its sha256).
RELEASES = f"https://github.com/{REGISTRY_NAME.removeprefix('io.github.')}/releases/download"
REGISTRY_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
DESCRIPTION = "Safe, structured access to your IMAP mail: search, read, attachments; writes only if allowed."
#: Where it runs: Windows by features detected (no POSIX signals, rlimits or process groups there), which
#: the suite simulates on Linux (tests/integration/setup/test_windows_simulation.py; docs/bundle.md).
PLATFORMS = ["darwin", "linux", "win32"]
#: The third-party notices the bundle carries: the licenses of the text models' packages and where their
#: weights come from.
NOTICES = "NOTICES.md"


def project() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        data: dict[str, Any] = tomllib.load(file)["project"]
    return data


def version() -> str:
    return str(project()["version"])


def user_config() -> dict[str, tuple[str, dict[str, Any]]]:
    """The bundle's form: key -> (the variable it sets, the manifest's field); the server names a field
    it finds wrong by the label given here."""
    sys.path.insert(0, str(ROOT / "src"))
    from mail_imap_mcp.config.form import BUNDLE_FORM

    return BUNDLE_FORM


def tools() -> list[dict[str, str]]:
    """Every tool's name and description, from its declaration."""
    sys.path.insert(0, str(ROOT / "src"))
    from mail_imap_mcp.tools.registry import TOOLS

    return [{"name": spec.name, "description": spec.description} for spec in TOOLS]


def manifest(release: str) -> dict[str, Any]:
    """The bundle's manifest.json."""
    env = {variable: f"${{user_config.{key}}}" for key, (variable, _) in user_config().items()}
    return {
        "manifest_version": "0.4",
        "name": NAME,
        "display_name": "Mail (IMAP)",
        "version": release,
        "description": DESCRIPTION,
        "long_description": str(project()["description"]),
        "author": {"name": "mail-imap-mcp contributors"},
        "icon": "icon.png",
        "server": {
            "type": "uv",
            "entry_point": "server/main.py",
            "mcp_config": {
                "command": "uv",
                "args": ["run", "--directory", "${__dirname}", "--frozen", "${__dirname}/server/main.py"],
                "env": env,
            },
        },
        "tools": tools(),
        "keywords": ["email", "imap", "mail", "gmail", "fastmail", "icloud", "outlook"],
        "license": str(project()["license"]),
        "compatibility": {
            "platforms": PLATFORMS,
            "runtimes": {"python": str(project()["requires-python"])},
        },
        "user_config": {key: field for key, (_, field) in user_config().items()},
    }


def runtime_pins() -> list[str]:
    """``name==version`` of every package of requirements-runtime.lock and requirements-meaning.lock (the
    runtime's at the same versions, and the meaning extra's): what the tests ran with."""
    pins: dict[str, None] = {}
    for lock in ("requirements-runtime.lock", "requirements-meaning.lock"):
        text = (ROOT / lock).read_text(encoding="utf-8")
        pins |= dict.fromkeys(re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*==[^\s;\\]+)", text, re.MULTILINE))
    return list(pins)


def meaning_marker() -> str:
    """Where the bundle installs the meaning extra: the platforms with the multilingual model's wheels
    (numpy's; elsewhere it installs without it, and never compiles it). The extra itself adds WordLlama
    only where it has wheels."""
    sys.path.insert(0, str(ROOT / "src"))
    from mail_imap_mcp.meaning.platforms import MULTILINGUAL_WHEELS

    return MULTILINGUAL_WHEELS.marker


def bundle_pyproject(release: str, wheel: str) -> str:
    """The bundle's pyproject.toml: the wheel it carries, with the meaning extra where the platform has its
    wheels, the locked versions as constraints (a platform's own extra dependencies, such as colorama on
    Windows, still resolve)."""
    pins = "".join(f'    "{pin}",\n' for pin in runtime_pins())
    return (
        "# Generated by scripts/mcpb: the MCP Bundle's environment, installed by the host's uv.\n"
        "[project]\n"
        f'name = "{NAME}-bundle"\n'
        f'version = "{release}"\n'
        f'requires-python = "{project()["requires-python"]}"\n'
        f'dependencies = [\n    "{NAME}=={release}",\n    "{NAME}[meaning]=={release} ; {meaning_marker()}",\n]\n\n'
        "[tool.uv]\n"
        "package = false\n"
        f"constraint-dependencies = [\n{pins}]\n\n"
        "[tool.uv.sources]\n"
        f'{NAME} = {{ path = "wheels/{wheel}" }}\n'
    )


def server_json(release: str, bundle: Path | None = None) -> dict[str, Any]:
    """The MCP Registry's entry: the PyPI package (run with uvx), and with ``bundle`` (a release's built
    bundle, its sha256 taken) the bundle too, as the release page serves it."""
    packages: list[dict[str, Any]] = [
        {
            "registryType": "pypi",
            "identifier": NAME,
            "version": release,
            "runtimeHint": "uvx",
            "transport": {"type": "stdio"},
            "packageArguments": [{"type": "positional", "value": "serve"}],
            "environmentVariables": [
                {
                    "name": variable,
                    "description": field["description"],
                    "isRequired": bool(field.get("required")),
                    "isSecret": bool(field.get("sensitive")),
                    "format": {"boolean": "boolean", "file": "filepath", "directory": "filepath"}.get(
                        field["type"], "string"
                    ),
                }
                for variable, field in user_config().values()
            ],
        }
    ]
    if bundle is not None:
        packages.append(
            {
                "registryType": "mcpb",
                "identifier": f"{RELEASES}/v{release}/{bundle.name}",
                "version": release,
                "fileSha256": hashlib.sha256(bundle.read_bytes()).hexdigest(),
                "transport": {"type": "stdio"},
            }
        )
    return {
        "$schema": REGISTRY_SCHEMA,
        "name": REGISTRY_NAME,
        "title": "Mail (IMAP)",
        "description": DESCRIPTION,
        "version": release,
        "packages": packages,
    }


#: The earliest time a zip entry can carry (1980-01-01 UTC).
ZIP_EPOCH = 315532800


def build_time() -> int:
    """The time every entry of the bundle carries: ``SOURCE_DATE_EPOCH`` where set, else the checkout's
    commit's, so that two builds of one commit are the same bytes (the packing CLI stamps the build's)."""
    given = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if given:
        return int(given)
    done = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%ct"], capture_output=True, text=True, check=False
    )
    return int(done.stdout) if done.returncode == 0 and done.stdout.strip() else ZIP_EPOCH


def stamp(bundle: Path, when: int) -> None:
    """Rewrite the zip ``bundle`` so that the same files make the same bytes: its files in name order,
    each dated ``when`` (seconds, UTC), mode 0644, deflated alike, without the packer's extra fields."""
    date_time = time.gmtime(max(when, ZIP_EPOCH))[:6]
    with zipfile.ZipFile(bundle) as packed:
        files = sorted((info.filename, packed.read(info)) for info in packed.infolist() if not info.is_dir())
    stamped = bundle.with_name(bundle.name + ".stamped")
    with zipfile.ZipFile(stamped, "w") as archive:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix: the mode below is read as one
            info.external_attr = 0o100644 << 16
            archive.writestr(info, data, compresslevel=9)
    stamped.replace(bundle)


def run(argv: list[str], **kwargs: Any) -> None:
    done = subprocess.run(argv, check=False, **kwargs)
    if done.returncode != 0:
        raise SystemExit(f"scripts/mcpb: {' '.join(argv[:3])} ... exited with status {done.returncode}")


def _dated() -> dict[str, str]:
    """The environment of the wheel's build: its entries dated as the bundle's (hatchling reads it)."""
    return {**os.environ, "SOURCE_DATE_EPOCH": str(build_time())}


def build(out: Path) -> Path:
    """Build, validate and pack the bundle into ``out``; returns its path."""
    release = version()
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is None or not MCPB_CLI.exists():
        raise SystemExit("scripts/mcpb: needs uv and the bundle CLI: run it through scripts/mcpb")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mcpb-") as temp:
        stage = Path(temp) / "bundle"
        wheels = stage / "wheels"
        run([uv, "build", "--wheel", "--quiet", "--out-dir", str(wheels), str(ROOT)], env=_dated())
        (wheel,) = (path.name for path in wheels.glob("*.whl"))
        shutil.copy2(PACKAGING / "icon.png", stage / "icon.png")
        # The text models' licenses and the weights' origins (the meaning extra carries the weights).
        shutil.copy2(PACKAGING / NOTICES, stage / NOTICES)
        (stage / "server").mkdir()
        shutil.copy2(PACKAGING / "server" / "main.py", stage / "server" / "main.py")
        (stage / "pyproject.toml").write_text(bundle_pyproject(release, wheel), encoding="utf-8")
        # Resolved for every platform, with hashes: the host's uv installs this and nothing newer.
        run([uv, "lock", "--quiet", "--directory", str(stage)])
        (stage / "manifest.json").write_text(json.dumps(manifest(release), indent=2) + "\n", encoding="utf-8")
        run([str(MCPB_CLI), "validate", str(stage / "manifest.json")], stdout=subprocess.DEVNULL)
        target = out / f"{NAME}-{release}.mcpb"
        target.unlink(missing_ok=True)
        run([str(MCPB_CLI), "pack", str(stage), str(target)], stdout=subprocess.DEVNULL)
        stamp(target, build_time())
        shutil.copy2(wheels / wheel, out / wheel)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    print(f"{target} ({target.stat().st_size // 1024} KiB, sha256 {digest})")
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="scripts/mcpb", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where the bundle goes (dist/)")
    parser.add_argument("--server-json", action="store_true", help="rewrite server.json and stop")
    parser.add_argument(
        "--bundle", type=Path, help="with --server-json: a release's built bundle, listed with its sha256"
    )
    args = parser.parse_args(argv)
    if args.server_json:
        entry = server_json(version(), args.bundle)
        SERVER_JSON.write_text(json.dumps(entry, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {SERVER_JSON}")
        return
    build(args.out)


if __name__ == "__main__":
    main()
