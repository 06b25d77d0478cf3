// node-oidc-provider on loopback for the built-in sign-in's tests (tests/support/servers/oidc_provider.py starts it).
// argv: <oidc-provider's index.js> <port> <settings JSON>: {"ttl_file": path, "refresh_ttl_file": path,
// "delay_file": path, "clock_file": path, "clients": [...]}; the files hold how many seconds an access
// token issued now lasts, how many seconds a refresh token issued now lasts, how many milliseconds the
// token endpoint waits before it answers, and how many seconds the provider's clock is ahead (negative:
// behind), read on every request (a test changes them while it runs; a missing file means the default)
// (the package is installed into .cache/oidc-provider/, not beside this file, so it is imported by path).
// Prints "listening <issuer>" once it serves. Its development login pages accept any login and password:
// the login becomes the account id (`sub`), which introspection also reports as `username` for Dovecot.
// Stderr gets one line per token-endpoint request ("token <status>") and per request for its metadata
// ("metadata <status>"), which the fixture counts, and one per access token or refresh token issued
// ("access_token <account> <token>", "refresh_token ...").
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';

const [modulePath, port, settingsJson] = process.argv.slice(2);
const { default: Provider } = await import(pathToFileURL(modulePath).href);
const settings = JSON.parse(settingsJson);
const number = (file, otherwise) => (existsSync(file) ? Number(readFileSync(file, 'utf8')) : otherwise);
// The provider's clock: every time it reads (token lifetimes, expiry checks) comes from Date.now.
const realNow = Date.now.bind(Date);
let clockOffsetMs = 0;
Date.now = () => realNow() + clockOffsetMs;
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: settings.clients,
  scopes: ['openid', 'offline_access', 'mail', 'other'],
  ttl: {
    AccessToken: () => Number(readFileSync(settings.ttl_file, 'utf8')),
    RefreshToken: () => number(settings.refresh_ttl_file, 86400),
    DeviceCode: 600,
    Interaction: 600,
    Session: 3600,
    Grant: 86400,
  },
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    deviceFlow: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    clientCredentials: { enabled: true },
    // Opaque access tokens for the userinfo "resource" carry only OpenID scopes unless told otherwise.
    resourceIndicators: { enabled: false },
  },
  // Every refresh-token use rotates it; a used one presented again revokes the grant (reuse detection).
  rotateRefreshToken: () => true,
  issueRefreshToken: async (ctx, client, code) => client.grantTypeAllowed('refresh_token')
    && code.scopes.has('offline_access'),
  // The user a token logs in as: its account, or for an application's own token (client credentials)
  // the application, which Dovecot's master passdb lets open the mailboxes (tests/support/servers/dovecot.py).
  extraTokenClaims: async (ctx, token) => ({ username: token.accountId ?? token.clientId }),
  loadExistingGrant: async (ctx) => {
    const grantId = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
  },
  cookies: { keys: ['mail-imap-mcp-tests'] },
});

provider.use(async (ctx, next) => {
  clockOffsetMs = number(settings.clock_file, 0) * 1000;
  // The tests' own door: forget one access token (as its expiry would) without revoking its grant,
  // which revocation does here (revokeGrantPolicy).
  if (ctx.method === 'GET' && ctx.path === '/test/forget-access-token') {
    const token = await provider.AccessToken.find(ctx.query.token);
    await token?.destroy();
    ctx.body = { forgotten: Boolean(token) };
    return;
  }
  if (ctx.method === 'GET' && ctx.path.startsWith('/.well-known/')) {
    await next();
    process.stderr.write(`metadata ${ctx.status}\n`);
    return;
  }
  // An Entra-shaped door to /auth, which the microsoft preset's tests sign in through: a tenant where
  // users may not consent answers prompt=consent with "Need admin approval" (AADSTS90094) even after an
  // admin consented for the organisation (Entra shows it on its page; here it comes back at once, as a
  // declined consent does); select_account is taken; offline_access brings a refresh token unasked (here
  // by node-oidc-provider's own rule, which grants it with its consent page).
  if (ctx.method === 'GET' && ctx.path === '/entra/auth') {
    if ((ctx.query.prompt ?? '').split(' ').includes('consent')) {
      const back = new URL(ctx.query.redirect_uri);
      back.search = new URLSearchParams({
        error: 'access_denied',
        error_description: 'AADSTS90094: Need admin approval.',
        state: ctx.query.state ?? '',
      }).toString();
      ctx.redirect(back.href);
      return;
    }
    const query = { ...ctx.query, prompt: 'consent' };
    ctx.path = '/auth';
    ctx.query = query;
  }
  if (ctx.method === 'POST' && ctx.path === '/token') {
    const delay = number(settings.delay_file, 0);
    if (delay > 0) await sleep(delay);
    await next();
    process.stderr.write(`token ${ctx.status}\n`);
    return;
  }
  await next();
});

// The tests revoke an access token the application holds: they learn it here (loopback, test tokens).
provider.on('access_token.saved', (token) => {
  process.stderr.write(`access_token ${token.accountId} ${token.jti}\n`);
});
provider.on('refresh_token.saved', (token) => {
  process.stderr.write(`refresh_token ${token.accountId} ${token.jti}\n`);
});

const server = provider.listen(Number(port), '127.0.0.1', () => {
  process.stdout.write(`listening ${issuer}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
