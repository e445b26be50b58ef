// Calls the service directly from the test process, the way the console does (same encryption),
// for setting up state a test is not about.
import crypto from 'node:crypto';

export const ADMIN_PASSWORD = 'E2e-admin-Passw0rd!';

async function envelope<T>(res: Response): Promise<T> {
  const body = (await res.json()) as { code: number; message: string; data: T };
  if (body.code !== 20000) throw new Error(`${res.url}: ${body.code} ${body.message}`);
  return body.data;
}

export async function passwordLogin(baseUrl: string, username: string, password: string): Promise<string> {
  const { publicKey } = await envelope<{ publicKey: string }>(await fetch(`${baseUrl}/api/user/public-key`));
  const enc = (v: string) =>
    crypto
      .publicEncrypt(
        { key: publicKey, padding: crypto.constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
        Buffer.from(v),
      )
      .toString('base64');
  const { accessToken } = await envelope<{ accessToken: string }>(
    await fetch(`${baseUrl}/api/user/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: enc(username), password: enc(password) }),
    }),
  );
  return accessToken;
}

/** A call of the contract as a signed-in client: GET without a body, POST with one; answers `data`. */
export async function callApi<T>(baseUrl: string, token: string, path: string, body?: unknown): Promise<T> {
  return envelope<T>(
    await fetch(`${baseUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { Authorization: token, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
}

/** Leases a free board for 48 hours under `serverName` (what a test starts its workbench on). */
export function requestBoard<T = unknown>(baseUrl: string, token: string, serverName: string): Promise<T> {
  return callApi<T>(baseUrl, token, '/api/device/request-device', {
    requestDate: new Date(Date.now() + 48 * 3_600_000).toISOString(),
    filterReq: {},
    serverName,
  });
}
