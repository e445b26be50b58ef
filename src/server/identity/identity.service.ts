// Sign-in flows of the service and the credentials they end in. Every flow ends in `issueSession`:
// one access token with the configured lifetime (BIANBU_TOKEN_TTL_HOURS); with BIANBU_SINGLE_SESSION
// the user's older access tokens are revoked as 'displaced' first (a later use answers 50012).
// Failures answer one generic message per flow and are counted in the database (Throttle) per
// account and per address; past a limit the flow answers 429 with Retry-After. Every attempt is
// counted (reserved) before its secret is checked and given back only when it succeeds, so parallel
// guesses cost as many attempts as they are and the limit bounds how many are ever checked.
import crypto from 'node:crypto';
import { and, desc, eq, isNull } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { issueCredential, revokeAllOfKind } from '#server/auth/tokens.ts';
import { credentials, phoneCodes, sequenceCodes, users } from '#server/db/schema/identity.ts';
import { badRequest } from '#server/errors.ts';
import { endRevokedSessions } from '#server/realtime/session-end.ts';
import type { ApiKeyAnswer } from '#shared/user.ts';
import { IdentityErrorKey, PHONE_CODE_RESEND_SECONDS, PHONE_CODE_TTL_SECONDS } from '#shared/user.ts';
import {
  createUser,
  findUserById,
  findUserByPhone,
  findUserByUsername,
  freeUsername,
  type UserRow,
} from './identity.repo.ts';
import type { LoginKey } from './login-key.ts';
import { burnVerification, verifyPassword } from './passwords.ts';
import type { PhoneCodeSender } from './phone-sender.ts';
import { loadOrCreateSecret } from './secrets.ts';
import type { Limit, Throttle } from './throttle.ts';

const MINUTE = 60_000;

export const LIMITS = {
  loginUser: (u: string): Limit => ({ key: `login:u:${u.toLowerCase()}`, max: 5, windowMs: 15 * MINUTE }),
  loginIp: (ip: string): Limit => ({ key: `login:ip:${ip}`, max: 20, windowMs: 15 * MINUTE }),
  codeSendPhone: (p: string): Limit => ({
    key: `pcode:p:${p}`,
    max: 1,
    windowMs: PHONE_CODE_RESEND_SECONDS * 1000,
  }),
  codeSendPhoneHour: (p: string): Limit => ({ key: `pcode:ph:${p}`, max: 5, windowMs: 60 * MINUTE }),
  codeSendIp: (ip: string): Limit => ({ key: `pcode:ip:${ip}`, max: 20, windowMs: 60 * MINUTE }),
  phoneLoginPhone: (p: string): Limit => ({ key: `plogin:p:${p}`, max: 5, windowMs: 15 * MINUTE }),
  phoneLoginIp: (ip: string): Limit => ({ key: `plogin:ip:${ip}`, max: 30, windowMs: 15 * MINUTE }),
  sequenceIp: (ip: string): Limit => ({ key: `seq:ip:${ip}`, max: 10, windowMs: 15 * MINUTE }),
};

/** Wrong guesses a single phone code tolerates before it is burnt. */
const CODE_MAX_ATTEMPTS = 5;

export type SignInMethod = 'password' | 'phone' | 'sequence' | 'oidc' | 'idp' | 'cli';

const badCredentials = () => badRequest('Incorrect username or password', IdentityErrorKey.badCredentials);
const badCode = () => badRequest('The code is wrong or has expired', IdentityErrorKey.codeInvalid);
const badSequence = () =>
  badRequest('The sequence code is invalid or has expired', IdentityErrorKey.sequenceInvalid);

export class IdentityService {
  sender: PhoneCodeSender;

  private constructor(
    private readonly app: FastifyInstance,
    readonly loginKey: LoginKey,
    readonly throttle: Throttle,
    sender: PhoneCodeSender,
    private readonly codePepper: Buffer,
  ) {
    this.sender = sender;
  }

  static async create(
    app: FastifyInstance,
    loginKey: LoginKey,
    throttle: Throttle,
    sender: PhoneCodeSender,
  ): Promise<IdentityService> {
    const pepper = await loadOrCreateSecret(app.storage, 'phone-code-pepper', () =>
      crypto.randomBytes(32).toString('hex'),
    );
    return new IdentityService(app, loginKey, throttle, sender, Buffer.from(pepper, 'hex'));
  }

  private get db() {
    return this.app.storage.db;
  }

  private now(): Date {
    return this.app.clock.now();
  }

  private audit(entry: Parameters<FastifyInstance['audit']['record']>[0]): Promise<void> {
    return this.app.audit.record(entry);
  }

  /** Ends every successful sign-in: an access token, the single-session rule, the audit entry. */
  async issueSession(user: UserRow, method: SignInMethod, ip: string): Promise<string> {
    const now = this.now();
    if (this.app.config.BIANBU_SINGLE_SESSION)
      endRevokedSessions(this.app, await revokeAllOfKind(this.db, user.id, 'access', 'displaced', now));
    const token = await issueCredential(this.db, user.id, 'access', {
      ttlMs: this.app.config.BIANBU_TOKEN_TTL_HOURS * 3_600_000,
      now,
    });
    await this.audit({
      userId: user.id,
      username: user.username,
      action: 'login',
      result: 'ok',
      ip,
      detail: { method },
    });
    return token;
  }

  /**
   * Checks a username and password under the failure limits. Unknown accounts, accounts without a
   * password and deactivated accounts all cost one hash verification and answer the same error.
   */
  async checkPassword(
    username: string,
    password: string,
    ip: string,
    method: SignInMethod,
  ): Promise<UserRow> {
    const now = this.now();
    const userLimit = LIMITS.loginUser(username);
    const ipLimit = LIMITS.loginIp(ip);
    // Counted before the password is checked: parallel guesses cannot all pass a check first.
    await this.throttle.reserve([userLimit, ipLimit], now);
    const user = username ? await findUserByUsername(this.db, username) : undefined;
    const ok =
      user?.passwordHash && password
        ? await verifyPassword(password, user.passwordHash)
        : await burnVerification(password || 'x');
    if (!ok || !user?.isActive) {
      await this.audit({
        userId: user?.id ?? null,
        username: username.slice(0, 64),
        action: 'login',
        result: 'failed',
        ip,
        detail: { method, reason: !user ? 'unknown_user' : !user.isActive ? 'inactive' : 'bad_password' },
      });
      throw badCredentials();
    }
    await this.throttle.reset(userLimit.key);
    await this.throttle.release(ipLimit, now);
    return user;
  }

  /** POST /api/user/login: both fields RSA-OAEP ciphertexts; an undecryptable one is bad input. */
  async passwordLogin(usernameCipher: string, passwordCipher: string, ip: string): Promise<string> {
    const username = this.loginKey.decrypt(usernameCipher);
    const password = this.loginKey.decrypt(passwordCipher);
    if (username === undefined || password === undefined) {
      await this.throttle.hit(LIMITS.loginIp(ip), this.now());
      throw badRequest('The sign-in payload could not be decrypted', IdentityErrorKey.undecryptable);
    }
    const user = await this.checkPassword(username.trim(), password.trim(), ip, 'password');
    return this.issueSession(user, 'password', ip);
  }

  private codeHash(phone: string, code: string): string {
    return crypto.createHmac('sha256', this.codePepper).update(`${phone}:${code}`).digest('hex');
  }

  async sendPhoneCode(
    phone: string,
    ip: string,
  ): Promise<{ expiresInSeconds: number; resendAfterSeconds: number }> {
    const now = this.now();
    await this.throttle.take(
      [LIMITS.codeSendPhone(phone), LIMITS.codeSendPhoneHour(phone), LIMITS.codeSendIp(ip)],
      now,
    );
    const code = String(crypto.randomInt(0, 1_000_000)).padStart(6, '0');
    // A new code replaces any earlier one: only the latest code of a phone is ever accepted.
    await this.db
      .update(phoneCodes)
      .set({ consumedAt: now })
      .where(and(eq(phoneCodes.phone, phone), isNull(phoneCodes.consumedAt)));
    await this.db.insert(phoneCodes).values({
      id: crypto.randomUUID(),
      phone,
      codeHash: this.codeHash(phone, code),
      createdAt: now,
      expiresAt: new Date(now.getTime() + PHONE_CODE_TTL_SECONDS * 1000),
    });
    await this.sender.send({
      phone,
      code,
      body: `Your Bianbu Cloud sign-in code is ${code}. It expires in ${PHONE_CODE_TTL_SECONDS / 60} minutes.`,
    });
    await this.audit({ action: 'phone_code_sent', target: phone, result: 'ok', ip });
    return { expiresInSeconds: PHONE_CODE_TTL_SECONDS, resendAfterSeconds: PHONE_CODE_RESEND_SECONDS };
  }

  async phoneLogin(phone: string, code: string, ip: string): Promise<string> {
    const now = this.now();
    const phoneLimit = LIMITS.phoneLoginPhone(phone);
    const ipLimit = LIMITS.phoneLoginIp(ip);
    // Counted before the code is compared: parallel guesses cannot all pass a check first.
    await this.throttle.reserve([phoneLimit, ipLimit], now);
    const [row] = await this.db
      .select()
      .from(phoneCodes)
      .where(and(eq(phoneCodes.phone, phone), isNull(phoneCodes.consumedAt)))
      .orderBy(desc(phoneCodes.createdAt))
      .limit(1);
    const live = row && row.expiresAt.getTime() > now.getTime() ? row : undefined;
    const given = Buffer.from(this.codeHash(phone, code), 'hex');
    const expected = Buffer.from(live?.codeHash ?? this.codeHash(phone, 'no-code'), 'hex');
    const match = crypto.timingSafeEqual(given, expected) && live !== undefined;
    let consumed = false;
    if (match) {
      // The conditional update is what makes a code single-use under concurrent attempts.
      const done = await this.db
        .update(phoneCodes)
        .set({ consumedAt: now })
        .where(and(eq(phoneCodes.id, live.id), isNull(phoneCodes.consumedAt)))
        .returning({ id: phoneCodes.id });
      consumed = done.length === 1;
    } else if (live) {
      // Raised in the database, not from the value read above: parallel wrong guesses all count.
      await this.app.storage.query(
        `update phone_codes set attempts = attempts + 1,
           consumed_at = case when attempts + 1 >= $2 then $3::timestamptz else consumed_at end
         where id = $1 and consumed_at is null`,
        [live.id, CODE_MAX_ATTEMPTS, now],
      );
    }
    const user = consumed ? await this.phoneUser(phone) : undefined;
    if (!user) {
      await this.audit({
        username: null,
        target: phone,
        action: 'login',
        result: 'failed',
        ip,
        detail: { method: 'phone' },
      });
      throw badCode();
    }
    await this.throttle.reset(phoneLimit.key);
    await this.throttle.release(ipLimit, now);
    return this.issueSession(user, 'phone', ip);
  }

  /** The account of a phone; a number without one gets a new account when phone sign-up is on. */
  private async phoneUser(phone: string): Promise<UserRow | undefined> {
    const found = await findUserByPhone(this.db, phone);
    if (found) return found.isActive ? found : undefined;
    if (!this.app.config.BIANBU_PHONE_SIGNUP) return undefined;
    const username = await freeUsername(this.db, `phone_${phone.slice(-4)}`);
    return createUser(this.db, { username, displayName: username, phone });
  }

  async mintSequenceCode(
    userId: string,
    ttlSeconds: number,
    createdBy: string,
  ): Promise<{ sequenceCode: string; expiresAt: Date }> {
    const now = this.now();
    const sequenceCode = `sq_${crypto.randomBytes(32).toString('base64url')}`;
    const expiresAt = new Date(now.getTime() + ttlSeconds * 1000);
    await this.db.insert(sequenceCodes).values({
      codeHash: crypto.createHash('sha256').update(sequenceCode).digest('hex'),
      userId,
      createdBy,
      createdAt: now,
      expiresAt,
    });
    return { sequenceCode, expiresAt };
  }

  async sequenceLogin(sequenceCode: string, ip: string): Promise<string> {
    const now = this.now();
    const ipLimit = LIMITS.sequenceIp(ip);
    // Counted before the code is looked up: parallel guesses cannot all pass a check first.
    await this.throttle.reserve([ipLimit], now);
    // Looked up by its SHA-256: the stored value is useless to a reader of the database, and the
    // comparison happens on a digest the caller cannot steer.
    const hash = crypto.createHash('sha256').update(sequenceCode).digest('hex');
    const [row] = await this.app.storage.query<{ user_id: string }>(
      `update sequence_codes set consumed_at = $2
       where code_hash = $1 and consumed_at is null and expires_at > $2 returning user_id`,
      [hash, now],
    );
    const user = row ? await findUserById(this.db, row.user_id) : undefined;
    if (!user?.isActive) {
      await this.audit({ action: 'login', result: 'failed', ip, detail: { method: 'sequence' } });
      throw badSequence();
    }
    await this.throttle.release(ipLimit, now);
    return this.issueSession(user, 'sequence', ip);
  }

  async currentApiKey(userId: string): Promise<ApiKeyAnswer> {
    const [live] = await this.db
      .select()
      .from(credentials)
      .where(
        and(eq(credentials.userId, userId), eq(credentials.kind, 'apikey'), isNull(credentials.revokedAt)),
      )
      .orderBy(desc(credentials.createdAt))
      .limit(1);
    if (live) return { apiKey: null, hint: live.hint ?? '', createdAt: live.createdAt.toISOString() };
    return this.newApiKey(userId);
  }

  /** Revokes every API key of the user, then makes a new one, shown once. */
  async newApiKey(userId: string): Promise<ApiKeyAnswer> {
    const now = this.now();
    endRevokedSessions(this.app, await revokeAllOfKind(this.db, userId, 'apikey', 'refreshed', now));
    const apiKey = await issueCredential(this.db, userId, 'apikey', { now });
    return { apiKey, hint: `${apiKey.slice(0, 8)}…${apiKey.slice(-4)}`, createdAt: now.toISOString() };
  }

  async setAvatar(userId: string, url: string): Promise<string | null> {
    const [before] = await this.db
      .select({ avatar: users.avatar })
      .from(users)
      .where(eq(users.id, userId))
      .limit(1);
    await this.db.update(users).set({ avatar: url }).where(eq(users.id, userId));
    return before?.avatar ?? null;
  }
}
