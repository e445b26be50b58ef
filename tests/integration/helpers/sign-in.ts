// The browser's half of a password sign-in: username and password encrypted with RSA-OAEP (SHA-256)
// under the service's /api/user/public-key, as the console sends them.
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';

export async function loginEncryptor(app: FastifyInstance): Promise<(text: string) => string> {
  const publicKey: string = (await app.inject({ method: 'GET', url: '/api/user/public-key' })).json().data
    .publicKey;
  return (text) =>
    crypto
      .publicEncrypt(
        { key: publicKey, padding: crypto.constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
        Buffer.from(text),
      )
      .toString('base64');
}
