"""server.json, the MCP Registry's entry, against the registry's published schema (2025-12-11), and what
scripts/mcpb generates from pyproject.toml: the version is written in one place."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "packaging" / "registry" / "server.schema.json"
#: sha256 of https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json, byte for byte.
SCHEMA_SHA256 = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0"


def build_script() -> ModuleType:
    """``scripts/mcpb.py`` as a module (``scripts`` is not a package)."""
    name = "mail_imap_mcp_build_bundle"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "mcpb.py")
        assert spec is not None and spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(json.loads(SCHEMA.read_text()))


def test_the_vendored_schema_is_the_published_one() -> None:
    assert hashlib.sha256(SCHEMA.read_bytes()).hexdigest() == SCHEMA_SHA256
    assert json.loads(SCHEMA.read_text())["$id"] == build_script().REGISTRY_SCHEMA


def test_server_json_is_valid_and_generated_from_pyproject() -> None:
    entry = json.loads((ROOT / "server.json").read_text())
    validator().validate(entry)
    with (ROOT / "pyproject.toml").open("rb") as file:
        release = tomllib.load(file)["project"]["version"]
    assert entry == build_script().server_json(release), (
        "server.json is stale: run scripts/mcpb --server-json"
    )
    (pypi,) = entry["packages"]
    assert (pypi["identifier"], pypi["version"]) == ("mail-imap-mcp", release)
    secrets = [variable["name"] for variable in pypi["environmentVariables"] if variable["isSecret"]]
    assert secrets == ["MAIL_IMAP_DEFAULT_PASS", "MAIL_IMAP_DEFAULT_OAUTH2_CLIENT_SECRET"]


def test_a_releases_entry_lists_the_bundle_with_its_sha256(tmp_path: Path) -> None:
    bundle = tmp_path / "mail-imap-mcp-9.9.9.mcpb"
    bundle.write_bytes(b"PK\x05\x06" + bytes(18))
    entry: dict[str, Any] = build_script().server_json("9.9.9", bundle)
    validator().validate(entry)
    mcpb = entry["packages"][1]
    assert mcpb["registryType"] == "mcpb" and mcpb["identifier"].endswith("/v9.9.9/mail-imap-mcp-9.9.9.mcpb")
    assert mcpb["fileSha256"] == hashlib.sha256(bundle.read_bytes()).hexdigest()


def test_the_schema_refuses_what_the_registry_refuses() -> None:
    entry = json.loads((ROOT / "server.json").read_text())
    errors = list(validator().iter_errors({**entry, "name": "mail imap", "description": "x" * 101}))
    assert len(errors) == 2


def test_the_readme_names_the_server_for_the_registrys_ownership_check() -> None:
    # PyPI shows the README; the registry looks for "mcp-name: <name>" in it before listing the package.
    assert f"mcp-name: {build_script().REGISTRY_NAME}" in (ROOT / "README.md").read_text()


def test_the_bundles_form_has_a_field_that_keeps_a_local_index() -> None:
    """Issue 80: the form's boolean, off by default, sets MAIL_IMAP_INDEX ([server] index), without which
    search by meaning has nothing to rank."""
    manifest = build_script().manifest("9.9.9")
    field = manifest["user_config"]["local_index"]
    assert (field["type"], field["default"], field["required"]) == ("boolean", False, False)
    assert field["title"] == "Keep a local index"
    assert manifest["server"]["mcp_config"]["env"]["MAIL_IMAP_INDEX"] == "${user_config.local_index}"
