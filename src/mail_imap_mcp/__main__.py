from mail_imap_mcp.cli import main

main()
