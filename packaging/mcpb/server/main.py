"""The MCP Bundle's entry point: mail-imap-mcp, installed from the bundle's wheel by uv, serving MCP over
stdio (its settings come from the environment the manifest maps from the form)."""

from mail_imap_mcp.cli import main

if __name__ == "__main__":
    main(["serve"])
