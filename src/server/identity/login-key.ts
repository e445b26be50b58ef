// The RSA key pair the console encrypts usernames and passwords with (RSA-OAEP, SHA-256, as
// WebCrypto does it). Made once on first start and kept in the database for every instance.
import crypto from 'node:crypto';
import type { Storage } from '#server/db/client.ts';
import { loadOrCreateSecret } from './secrets.ts';

export interface LoginKey {
  publicKeyPem: string;
  /** Undefined when the ciphertext does not decrypt (tampered, another key, not OAEP-SHA-256). */
  decrypt(base64: string): string | undefined;
}

export async function loadLoginKey(storage: Storage): Promise<LoginKey> {
  const pair = await loadOrCreateSecret(storage, 'login-rsa', () => {
    const { publicKey, privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    return {
      publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    };
  });
  const privateKey = crypto.createPrivateKey(pair.privateKey);
  return {
    publicKeyPem: pair.publicKey,
    decrypt(base64) {
      try {
        const plain = crypto.privateDecrypt(
          { key: privateKey, padding: crypto.constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
          Buffer.from(base64.replace(/-/g, '+').replace(/_/g, '/'), 'base64'),
        );
        const text = new TextDecoder('utf-8', { fatal: true }).decode(plain);
        return text;
      } catch {
        return undefined;
      }
    },
  };
}
