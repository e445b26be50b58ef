// The caller's own workbench keymap (src/shared/keymap.ts): read, and replace after the checks the
// shape cannot express (reserved and clashing chords), worded with stable codes and the fields at fault.
import type { FastifyInstance } from 'fastify';
import { badRequest, forbidden } from '#server/errors.ts';
import { implement } from '#server/http/handlers.ts';
import {
  KEYMAP_ACTIONS,
  KeymapErrorKey,
  keymapCalls,
  keymapProblems,
  resolveBindings,
} from '#shared/keymap.ts';
import { readKeymap, writeKeymap } from './keymap.repo.ts';

export function keymapHandlers(app: FastifyInstance) {
  return implement(keymapCalls, {
    userKeymapGet: async (_input, { user }) => {
      if (!user) throw forbidden();
      return readKeymap(app.storage, user.id);
    },
    userKeymapSave: async (input, { user }) => {
      if (!user) throw forbidden();
      const problems = keymapProblems(resolveBindings(input));
      const reserved = problems.filter((p) => p.kind === 'reserved');
      if (reserved.length > 0) {
        const p = reserved[0];
        throw badRequest(
          `${p.chord} cannot be bound: the ${p.by === 'browser' ? 'browser' : 'console'} keeps it for itself`,
          KeymapErrorKey.reserved,
          reserved.map((r) => ({ path: `overrides.${r.action}`, message: `${r.chord} is reserved` })),
        );
      }
      if (problems.length > 0) {
        const p = problems[0];
        const text =
          p.kind === 'prefix'
            ? `${p.chord} of ${p.other} is the first key of ${p.sequence} of ${p.action}`
            : p.kind === 'duplicate'
              ? `${p.chord} is bound to both ${p.other} and ${p.action}`
              : '';
        throw badRequest(
          `Clashing keys: ${text}`,
          KeymapErrorKey.conflict,
          problems.map((q) => ({
            path: `overrides.${q.action}`,
            message:
              q.kind === 'reserved' ? `${q.chord} is reserved` : `${q.chord} is also bound to ${q.other}`,
          })),
        );
      }
      // Known action ids only reach here (the schema's enum); keep the stored object in list order.
      const overrides: typeof input.overrides = {};
      for (const a of KEYMAP_ACTIONS) if (input.overrides[a]) overrides[a] = input.overrides[a];
      return writeKeymap(app.storage, user.id, { preset: input.preset, overrides }, app.clock.now());
    },
  });
}
