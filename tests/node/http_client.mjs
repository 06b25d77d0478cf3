// The official TypeScript MCP SDK as a client of mail-imap-mcp over streamable HTTP.
//
// Usage: node http_client.mjs <url> <token>   (MCP_NODE_DIR: the folder whose node_modules holds the
// SDK; scripts/test installs it into .cache/node/ from tests/node/package-lock.json)
//
// Lists the tools, calls every read-only tool (and one failing call), checks each result the way the Python
// tests do (envelope keys, text block equal to structuredContent, isError == !success, valid against
// the tool's outputSchema, checked here explicitly besides the SDK's own check), then checks that a
// wrong token is refused. Prints one JSON report on stdout; exits 1 with the reason on stderr.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const [url, token] = process.argv.slice(2);
const sdkDir = process.env.MCP_NODE_DIR;
if (!url || !token || !sdkDir) {
  console.error("usage: MCP_NODE_DIR=<dir> node http_client.mjs <url> <token>");
  process.exit(2);
}
const require = createRequire(join(sdkDir, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { AjvJsonSchemaValidator } = require("@modelcontextprotocol/sdk/validation/ajv");
// Not require(".../package.json"): the SDK's exports map sends that to dist/cjs/package.json.
const sdkManifest = join(sdkDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json");
const sdkVersion = JSON.parse(readFileSync(sdkManifest, "utf8")).version;

const ROOT_KEYS = ["data", "error", "meta", "success", "summary"];
const READ_TOOLS = [
  "imap_list_accounts",
  "imap_list_mailboxes",
  "imap_search_messages",
  "imap_get_message",
  "imap_get_message_raw",
  "imap_get_attachment",
  "imap_get_thread",
  "imap_get_changes",
  "imap_get_operation",
];

function check(condition, message) {
  if (!condition) throw new Error(message);
}

function connect(bearer) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  });
  const client = new Client({ name: "mail-imap-mcp-node-test", version: "1.0.0" });
  return { client, transport };
}

async function main() {
  const { client, transport } = connect(token);
  await client.connect(transport);
  const { tools } = await client.listTools();
  const validators = new AjvJsonSchemaValidator();
  const schemas = Object.fromEntries(tools.map((tool) => [tool.name, tool.outputSchema]));
  const report = {
    sdk: sdkVersion,
    protocol: transport.protocolVersion ?? null,
    session: Boolean(transport.sessionId),
    tools: tools.map((tool) => tool.name),
    read_only: tools.filter((tool) => tool.annotations?.readOnlyHint).map((tool) => tool.name),
    calls: {},
  };

  async function call(name, args) {
    const result = await client.callTool({ name, arguments: args });
    const envelope = result.structuredContent;
    check(envelope && typeof envelope === "object", `${name}: no structuredContent`);
    check(JSON.stringify(Object.keys(envelope).sort()) === JSON.stringify(ROOT_KEYS), `${name}: root keys ${Object.keys(envelope)}`);
    check(result.content.length === 1 && result.content[0].type === "text", `${name}: one text block expected`);
    check(
      JSON.stringify(JSON.parse(result.content[0].text)) === JSON.stringify(envelope),
      `${name}: text block differs from structuredContent`,
    );
    check(Boolean(result.isError) === !envelope.success, `${name}: isError ${result.isError} but success ${envelope.success}`);
    check(schemas[name], `${name}: no outputSchema listed`);
    const verdict = validators.getValidator(schemas[name])(envelope);
    check(verdict.valid, `${name}: envelope does not match outputSchema: ${verdict.errorMessage}`);
    report.calls[name] = [...(report.calls[name] ?? []), envelope.success ? "ok" : envelope.error.code];
    return envelope;
  }

  const accounts = await call("imap_list_accounts", {});
  check(accounts.success && accounts.data.accounts.length === 1, "imap_list_accounts: one account expected");
  const boxes = await call("imap_list_mailboxes", { include_counts: true });
  check(boxes.data.mailboxes[0].name === "INBOX", "imap_list_mailboxes: INBOX first");
  const found = await call("imap_search_messages", { limit: 2 });
  check(found.data.total === 3 && Boolean(found.data.next_cursor), "imap_search_messages: 3 messages, 2 per page");
  const next = await call("imap_search_messages", { limit: 2, cursor: found.data.next_cursor });
  check(next.data.messages.length === 1 && !next.data.next_cursor, "imap_search_messages: second page");
  const messageId = found.data.messages[0].message_id;
  const message = await call("imap_get_message", { message_id: messageId });
  check(message.data.message.subject === found.data.messages[0].subject, "imap_get_message: same subject");
  const thread = await call("imap_get_thread", { message_id: messageId });
  check(thread.data.messages.some((m) => m.message_id === messageId), "imap_get_thread: the message itself");
  const raw = await call("imap_get_message_raw", { message_id: messageId, max_bytes: 512 });
  check(raw.success && raw.data.returned_bytes > 0, "imap_get_message_raw: bytes");
  const withCsv = [...found.data.messages, ...next.data.messages].find((m) => m.has_attachments);
  check(withCsv, "imap_search_messages: one message with an attachment expected");
  const detail = await call("imap_get_message", { message_id: withCsv.message_id });
  const [csv] = detail.data.message.attachments;
  const part = { message_id: withCsv.message_id, part_id: csv.part_id, mode: "bytes" };
  const attachment = await call("imap_get_attachment", part);
  const bytes = Buffer.from(attachment.data.raw_base64, "base64").toString("utf8");
  check(bytes.includes("March,42"), "imap_get_attachment: the CSV's bytes");
  const first = await call("imap_get_changes", {});
  check(Boolean(first.data.changes_token) && !first.data.new, "imap_get_changes: a first token only");
  const changes = await call("imap_get_changes", { since: first.data.changes_token });
  const { new: arrived, changed, expunged } = changes.data;
  check(arrived.length + changed.length + expunged.length === 0, "imap_get_changes: nothing changed since");
  const operation = await call("imap_get_operation", { operation_id: "op_1_abc" });
  check(!operation.success && operation.error.code === "not_found", "imap_get_operation: not_found expected");
  const failed = await call("imap_get_message", { message_id: "not-a-message-id" });
  check(!failed.success && failed.error.code === "invalid_input", "imap_get_message: invalid_input expected");
  for (const name of READ_TOOLS) check(report.calls[name], `${name} was not called`);
  await transport.terminateSession();
  await client.close();

  const wrong = connect(`${token}-wrong`);
  try {
    await wrong.client.connect(wrong.transport);
    report.wrong_token = { accepted: true };
  } catch (error) {
    report.wrong_token = { status: error?.code ?? null, message: String(error?.message ?? error) };
  }
  await wrong.client.close().catch(() => {});
  process.stdout.write(JSON.stringify(report) + "\n");
}

main().catch((error) => {
  console.error(error?.stack ?? String(error));
  // fetch's own error says only "fetch failed": what the socket said is its cause.
  if (error?.cause) console.error("cause:", error.cause?.stack ?? String(error.cause));
  process.exit(1);
});
