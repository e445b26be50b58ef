import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { encryptFields, pkceChallenge, sha256Fallback } from '#web/auth/crypto.ts';
import { exchangeQuery, StateMismatchError } from '#web/auth/oidc.ts';

describe('browser-side sign-in cryptography', () => {
  it('encrypts each field with RSA-OAEP SHA-256 so the service key decrypts it', async () => {
    const { publicKey, privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const [u, p] = await encryptFields(pem, ['alice', 'pässwörd with spaces']);
    const open = (b64: string) =>
      crypto
        .privateDecrypt(
          { key: privateKey, padding: crypto.constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
          Buffer.from(b64, 'base64'),
        )
        .toString('utf8');
    expect(open(u)).toBe('alice');
    expect(open(p)).toBe('pässwörd with spaces');
    expect(u).toMatch(/^[A-Za-z0-9+/]+=*$/);
  });

  it('derives the PKCE challenge of RFC 7636 appendix B', async () => {
    expect(await pkceChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe(
      'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    );
  });

  it('has a SHA-256 fallback that agrees with the platform for every length around the block edges', () => {
    for (const len of [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000]) {
      const data = crypto.randomBytes(len);
      expect(Buffer.from(sha256Fallback(data)).toString('hex')).toBe(
        crypto.createHash('sha256').update(data).digest('hex'),
      );
    }
  });

  it('sends the verifier and redirect_uri of the pending sign-in with the code, and refuses a foreign state', () => {
    const pending = { verifier: 'v'.repeat(43), state: 's1', redirectUri: 'http://localhost/mainboard' };
    const q = exchangeQuery(new URLSearchParams('code=c1&state=s1&iss=http%3A%2F%2Fidp'), pending);
    expect(q).toEqual({
      code: 'c1',
      code_verifier: pending.verifier,
      redirect_uri: pending.redirectUri,
      iss: 'http://idp',
    });
    expect(() => exchangeQuery(new URLSearchParams('code=c1&state=other'), pending)).toThrow(
      StateMismatchError,
    );
    expect(exchangeQuery(new URLSearchParams('code=c2'), null)).toEqual({ code: 'c2' });
  });
});
