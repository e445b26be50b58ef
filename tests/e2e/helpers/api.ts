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
