"""The clients the tests drive the server with: in-process MCP clients, the envelope checker, elicitation
answers, subscriptions, and a real browser."""
