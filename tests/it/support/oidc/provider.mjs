// A real OpenID provider for the tests: panva's oidc-provider (installed by scripts/test, its
// folder in WATASU_OIDC_PROVIDER), one client for the app, and a small login and consent
// interaction of our own. The login name chooses the claims:
//   alice@corp.test             verified address, subject "alice@corp.test"
//   unverified/alice@corp.test  the same address, email_verified false
//   other/alice@corp.test       the same address under another subject
// OIDC_MODE makes the ID token wrong in one way, re-signed by this provider so that the app's own
// checks are what refuse it: wrong-audience, wrong-issuer, wrong-nonce, expired, from-the-future
// (issued ten minutes ahead), bad-signature (signed with a key nobody published); or within-skew,
// a clock 30 s off both ways, which the app must still take; or string-email-verified, which sends
// `email_verified` as the string "true" instead of a boolean. Settings come from the environment:
// OIDC_CLIENT_ID, OIDC_CLIENT_SECRET.
//
// It listens on a free port at once and prints `listening on ISSUER`; the app is then started
// with that issuer, and its redirect URI is given by `POST /test/redirect-uri` (the body), which
// builds the provider. No port is ever chosen before it is bound.

import crypto from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const root = env('WATASU_OIDC_PROVIDER');
const { default: Provider } = await import(
  pathToFileURL(path.join(root, 'node_modules/oidc-provider/lib/index.js')).href
);

const mode = process.env.OIDC_MODE || 'normal';

// Each key is generated as PEM and read back. A key object straight from generateKeyPairSync shares
// its lock with the job that made it, and Node 20 deadlocks at random when the GC frees that job
// while the key is being used (exported or signing with).
const rsa = () => crypto.createPrivateKey(
  crypto.generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } }).privateKey,
);
const signingKey = rsa();
const strangerKey = rsa();
const jwk = { ...signingKey.export({ format: 'jwk' }), kid: 'test-key', use: 'sig', alg: 'RS256' };

function claimsOf(login) {
  const [flag, email] = login.includes('/') ? login.split('/', 2) : ['', login];
  return {
    sub: login,
    email,
    email_verified: flag !== 'unverified',
    name: `Test ${email.split('@')[0]}`,
  };
}

let provider;
let handle;

/** The provider for an app whose callback is `redirectUri`. */
function build(issuer, redirectUri) {
  provider = new Provider(issuer, {
    clients: [{
      client_id: env('OIDC_CLIENT_ID'),
      client_secret: env('OIDC_CLIENT_SECRET'),
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    }],
    jwks: { keys: [jwk] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    // The claims in the ID token itself, as Google and Entra ID send them.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    pkce: { required: () => true },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    cookies: { keys: ['test-provider-cookie-key'] },
    findAccount: (ctx, id) => ({ accountId: id, claims: () => claimsOf(id) }),
  });
  provider.proxy = false;
  provider.use(interactions);
  handle = provider.callback();
}

const b64 = (value) => Buffer.from(value).toString('base64url');

/** The ID token, changed as OIDC_MODE says and signed again. */
function rewrite(idToken) {
  const [header, payload] = idToken.split('.');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  let key = signingKey;
  const now = Math.floor(Date.now() / 1000);
  if (mode === 'wrong-audience') claims.aud = 'another-client';
  if (mode === 'wrong-issuer') claims.iss = 'https://issuer.invalid';
  if (mode === 'wrong-nonce') claims.nonce = 'a nonce of another sign-in';
  if (mode === 'expired') {
    claims.iat = now - 3600;
    claims.exp = now - 600;
  }
  if (mode === 'from-the-future') {
    claims.iat = now + 600;
    claims.exp = now + 4200;
  }
  if (mode === 'within-skew') {
    claims.iat = now + 30;
    claims.exp = now - 30;
  }
  if (mode === 'bad-signature') key = strangerKey;
  if (mode === 'string-email-verified') claims.email_verified = 'true';
  const input = `${header}.${b64(JSON.stringify(claims))}`;
  return `${input}.${crypto.sign('sha256', Buffer.from(input), key).toString('base64url')}`;
}

const page = (title, body) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title></head><body><main><h1>${title}</h1>${body}</main></body></html>`;

async function readForm(req) {
  let text = '';
  for await (const chunk of req) text += chunk;
  return new URLSearchParams(text);
}

async function interactions(ctx, next) {
  const match = ctx.path.match(/^\/interaction\/([^/]+)(?:\/(login|confirm|abort))?$/);
  if (!match) {
    await next();
    if (ctx.path === '/token' && ctx.status === 200 && mode !== 'normal') {
      const body = typeof ctx.body === 'string' ? JSON.parse(ctx.body) : ctx.body;
      body.id_token = rewrite(body.id_token);
      ctx.body = body;
    }
    return;
  }
  const [, uid, action] = match;
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  if (ctx.method === 'GET' && !action) {
    ctx.type = 'html';
    ctx.body = details.prompt.name === 'login'
      ? page('Test provider: sign in', `<form method="post" action="/interaction/${uid}/login" data-prompt="login">
<label for="login">Account</label> <input id="login" name="login" autocomplete="username" required>
<button type="submit">Sign in</button></form>`)
      : page('Test provider: allow access', `<p>watasu asks for your address and name.</p>
<form method="post" action="/interaction/${uid}/confirm" data-prompt="consent"><button type="submit">Allow</button></form>
<form method="post" action="/interaction/${uid}/abort"><button type="submit">Deny</button></form>`);
    return;
  }
  const form = await readForm(ctx.req);
  let result;
  if (action === 'login') {
    result = { login: { accountId: form.get('login') } };
  } else if (action === 'confirm') {
    const { accountId } = details.session;
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId, clientId: details.params.client_id });
    const missing = details.prompt.details.missingOIDCScope;
    if (missing) grant.addOIDCScope(missing.join(' '));
    result = { consent: { grantId: await grant.save() } };
  } else {
    result = { error: 'access_denied', error_description: 'End-User aborted interaction' };
  }
  const to = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: action !== 'login' });
  ctx.redirect(to);
  ctx.status = 303;
}

const server = http.createServer(async (req, res) => {
  if (handle) return handle(req, res);
  if (req.method === 'POST' && req.url === '/test/redirect-uri') {
    let body = '';
    for await (const chunk of req) body += chunk;
    build(`http://127.0.0.1:${server.address().port}`, body.trim());
    res.writeHead(204).end();
    return;
  }
  res.writeHead(503).end('not configured yet');
});
server.listen(0, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
