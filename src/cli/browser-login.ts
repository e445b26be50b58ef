// `bianbu login` without a key: the provider's authorization code flow with PKCE (S256), returning
// to a loopback listener (RFC 8252 §7.3), as `gh auth login` and `tsh login` do (src/shared/cli-auth.ts).
//
// Lifecycle of one sign-in: ask the service where to send the browser → listen on 127.0.0.1, port 0
// → open the browser at the authorize URL (and print it) → wait for GET /callback: a `state` that is
// not ours is refused with a page and the wait goes on; ours with `error` ends the sign-in; ours with
// `code` is redeemed at the service, and the browser tab is answered only then, with the outcome →
// the listener closes. A timeout (default 5 minutes) or Ctrl+C also closes it.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CLI_CALLBACK_PATH, cliAuthCalls } from '#shared/cli-auth.ts';
import type { ResponseOf } from '#shared/http.ts';
import { invoke } from './client.ts';
import { CliError } from './errors.ts';

const loginConfigCall = cliAuthCalls.find((c) => c.name === 'cliLoginConfig')!;
const tokenCall = cliAuthCalls.find((c) => c.name === 'cliTokenByCode')!;

export type CliToken = ResponseOf<typeof tokenCall>;

export interface BrowserLoginOptions {
  url: string;
  openBrowser: boolean;
  timeoutMs: number;
  /** Where the URL and progress are told (stderr). */
  say: (text: string) => void;
}

const b64url = (b: Buffer) => b.toString('base64url');

function sameSecret(a: string, b: string): boolean {
  const x = crypto.createHash('sha256').update(a).digest();
  const y = crypto.createHash('sha256').update(b).digest();
  return crypto.timingSafeEqual(x, y);
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>body{font:16px system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em;color:#222}</style>
</head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(body)}</p></body></html>`;
}

/** Answers the browser tab; resolves once the page is handed to the system (before bianbu exits). */
function answer(res: http.ServerResponse, status: number, html: string): Promise<void> {
  return new Promise((resolve) => {
    res.once('finish', () => resolve());
    res.once('close', () => resolve());
    res
      .writeHead(status, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
        connection: 'close',
      })
      .end(html);
  });
}

/** Opens a URL in the user's browser: $BROWSER, else the platform's opener. Failures are silent. */
export function openInBrowser(url: string): void {
  const [cmd, ...args] = process.env.BROWSER
    ? [process.env.BROWSER, url]
    : process.platform === 'darwin'
      ? ['open', url]
      : process.platform === 'win32'
        ? ['cmd', '/c', 'start', '""', url.replace(/&/g, '^&')]
        : ['xdg-open', url];
  try {
    const child = spawn(cmd, args, { stdio: 'ignore', detached: true });
    child.on('error', () => {});
    child.unref();
  } catch {
    // The printed URL is the way in.
  }
}

export async function browserLogin(opts: BrowserLoginOptions): Promise<CliToken> {
  let config: ResponseOf<typeof loginConfigCall>;
  try {
    config = await invoke({ profile: '', url: opts.url }, loginConfigCall, {});
  } catch (e) {
    if (e instanceof CliError && e.cls === 'notfound')
      throw new CliError(
        `${opts.url} offers no browser sign-in for bianbu: sign in with an API key (bianbu login --with-key)`,
        'cli.browser_login_unavailable',
        'auth',
      );
    throw e;
  }

  const verifier = b64url(crypto.randomBytes(32));
  const challenge = b64url(crypto.createHash('sha256').update(verifier).digest());
  const state = b64url(crypto.randomBytes(24));

  let finish: (r: { code: string; iss?: string; res: http.ServerResponse } | Error) => void = () => {};
  const arrived = new Promise<{ code: string; iss?: string; res: http.ServerResponse } | Error>(
    (resolve) => (finish = resolve),
  );
  let done = false;
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method !== 'GET' || u.pathname !== CLI_CALLBACK_PATH) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    const given = u.searchParams.get('state') ?? '';
    if (done || !sameSecret(given, state)) {
      // Not the answer to our request (a stale tab, or another page poking at the port): refuse it
      // without ending the sign-in the user is doing.
      opts.say('refused a sign-in callback whose state does not match this login');
      void answer(res, 400, page('Sign-in refused', 'This page does not belong to the sign-in bianbu is waiting for.'));
      return;
    }
    done = true;
    const error = u.searchParams.get('error');
    const code = u.searchParams.get('code');
    if (error || !code) {
      const why = u.searchParams.get('error_description') ?? error ?? 'no code';
      void answer(res, 400, page('Sign-in failed', `${why}. You can close this tab.`));
      finish(new CliError(`the sign-in was not completed: ${why}`, 'cli.login_denied', 'auth'));
      return;
    }
    finish({ code, iss: u.searchParams.get('iss') ?? undefined, res });
  });
  server.on('connection', (s) => s.unref());
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(new CliError(`cannot listen on 127.0.0.1: ${err.message}`, 'cli.listen_failed', 'network')),
    );
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}${CLI_CALLBACK_PATH}`;

  const authorize = new URL(config.authorizeUrl, opts.url);
  authorize.searchParams.set('redirect_uri', redirectUri);
  authorize.searchParams.set('state', state);
  authorize.searchParams.set('code_challenge', challenge);
  authorize.searchParams.set('code_challenge_method', 'S256');

  // Ready to be interrupted before anyone is told where to go.
  const timer = setTimeout(
    () =>
      finish(
        new CliError(
          `no sign-in within ${Math.round(opts.timeoutMs / 1000)}s`,
          'cli.login_timeout',
          'auth',
        ),
      ),
    opts.timeoutMs,
  );
  const onInt = () => finish(new CliError('sign-in cancelled', 'cli.cancelled', 'interrupt'));
  process.once('SIGINT', onInt);
  process.once('SIGTERM', onInt);
  opts.say(
    opts.openBrowser
      ? `Opening the browser to sign in. If it does not open, visit:\n  ${authorize.href}`
      : `To sign in, open this URL in a browser on this machine:\n  ${authorize.href}`,
  );
  opts.say(`Waiting for the sign-in (Ctrl+C to give up)...`);
  if (opts.openBrowser) openInBrowser(authorize.href);

  try {
    const got = await arrived;
    if (got instanceof Error) throw got;
    try {
      const token = await invoke({ profile: '', url: opts.url }, tokenCall, {
        code: got.code,
        code_verifier: verifier,
        redirect_uri: redirectUri,
        ...(got.iss ? { iss: got.iss } : {}),
      });
      await answer(
        got.res,
        200,
        page(
          'Signed in to Bianbu Cloud',
          `bianbu is signed in as ${token.username}. You can close this tab and go back to the terminal.`,
        ),
      );
      return token;
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      await answer(got.res, 400, page('Sign-in failed', `${why}. You can close this tab.`));
      throw e;
    }
  } finally {
    clearTimeout(timer);
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onInt);
    // Sockets are unref'd: an idle keep-alive connection of the browser never holds bianbu open.
    server.close();
    server.closeIdleConnections();
  }
}
