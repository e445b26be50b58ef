import { describe, expect, it } from 'vitest';
import {
  burnVerification,
  hashPassword,
  randomPassword,
  verifyPassword,
} from '#server/identity/passwords.ts';

describe('password hashing', () => {
  it('verifies the right password and refuses a wrong one', async () => {
    const stored = await hashPassword('correct horse');
    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$[\w-]+\$[\w-]+$/);
    expect(await verifyPassword('correct horse', stored)).toBe(true);
    expect(await verifyPassword('correct hors', stored)).toBe(false);
  });

  it('salts every hash: the same password hashes differently', async () => {
    expect(await hashPassword('same')).not.toBe(await hashPassword('same'));
  });

  it('refuses malformed stored values instead of throwing', async () => {
    for (const bad of [
      '',
      'plain',
      'scrypt$1$2$3',
      'scrypt$x$8$1$AA$BB',
      'bcrypt$1$2$3$4$5',
      'scrypt$4194304$8$1$AA$BB',
    ]) {
      expect(await verifyPassword('x', bad)).toBe(false);
    }
  });

  it('spends a verification without an account and never succeeds', async () => {
    expect(await burnVerification('anything')).toBe(false);
  });

  it('makes random passwords with upper, lower, digit and symbol', () => {
    for (let i = 0; i < 20; i++) {
      const p = randomPassword(16);
      expect(p).toHaveLength(16);
      expect(p).toMatch(/[A-Z]/);
      expect(p).toMatch(/[a-z]/);
      expect(p).toMatch(/[0-9]/);
      expect(p).toMatch(/[^A-Za-z0-9]/);
    }
  });
});
