// node's fetch (undici) reusing a kept-alive connection late, as a busy client does: a request, then
// <idle_ms> idle (under undici's own 4 s keep-alive, so the connection is kept), then <stall_ms> of an
// event loop that runs no timer (a long synchronous step: compiling a schema, parsing a big result),
// then a second request, which goes out on the connection undici still holds.
//
// Usage: node stalled_fetch.mjs <url> <idle_ms> <stall_ms>. Prints the second answer's status, or
// "failed: <error> <its cause>" (fetch's own error says only "fetch failed").
const [url, idleMs, stallMs] = process.argv.slice(2);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const first = await fetch(url);
await first.text();
await sleep(Number(idleMs));
const until = Date.now() + Number(stallMs);
while (Date.now() < until) {
  // the stall: nothing else runs on this thread meanwhile
}
try {
  const second = await fetch(url);
  await second.text();
  console.log(second.status);
} catch (error) {
  console.log(`failed: ${error} ${error.cause}`);
}
