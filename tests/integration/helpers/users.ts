// Fixture factory: a user with a live access token, inserted straight into storage.
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { issueCredential } from '#server/auth/tokens.ts';
import { memberships, organisations, roles, users } from '#server/db/schema/identity.ts';

export interface TestUser {
  id: string;
  username: string;
  token: string;
  headers: { authorization: string };
}

export async function makeUser(
  app: FastifyInstance,
  overrides: { username?: string; perms?: string[]; orgId?: string; orgType?: string } = {},
): Promise<TestUser> {
  const db = app.storage.db;
  const id = crypto.randomUUID();
  const username = overrides.username ?? `user_${id.slice(0, 8)}`;
  const orgId = overrides.orgId ?? 'test-org';
  await db
    .insert(organisations)
    .values({ id: orgId, name: orgId, type: overrides.orgType ?? 'ORG' })
    .onConflictDoNothing();
  const roleId = `role-${id}`;
  await db.insert(roles).values({ id: roleId, name: roleId, perms: overrides.perms ?? [] });
  await db.insert(users).values({ id, username, displayName: username, currentOrgId: orgId });
  await db.insert(memberships).values({ userId: id, orgId, roleId });
  const token = await issueCredential(db, id, 'access', { ttlMs: 3_600_000 });
  return { id, username, token, headers: { authorization: token } };
}
