// The sequences feature (src/shared/sequences.ts): saved sequences, and runs the service carries out.
// It starts after flashing and the lifecycle (its steps call them) and stops before them, so a
// stopping service ends its runs while the boards can still answer.
import type { FastifyInstance } from 'fastify';
import type { Feature } from '#server/feature.ts';
import { implement } from '#server/http/handlers.ts';
import { sequenceCalls } from '#shared/sequences.ts';
import { SequenceService } from './sequences.service.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Sequences and their runs (src/server/sequences/sequences.service.ts). */
    sequences: SequenceService;
  }
}

export const sequencesFeature: Feature = {
  name: 'sequences',
  setup(app: FastifyInstance) {
    app.decorate('sequences', new SequenceService(app));
  },
  calls: (app: FastifyInstance) => {
    const s = app.sequences;
    return implement(sequenceCalls, {
      fetchSequences: async (_in, { user }) => s.list(user!),
      saveSequence: async (input, { user }) => s.save(user!, input),
      deleteSequence: async ({ sequenceId }, { user }) => s.remove(user!, sequenceId),
      runSequence: async (input, { user }) => s.run(user!, input),
      fetchSequenceRun: async ({ runId }, { user }) => s.fetchRun(user!, runId),
      fetchSequenceRuns: async ({ sequenceId }, { user }) => s.runs(user!, sequenceId),
      cancelSequenceRun: async ({ runId }, { user }) => s.cancel(user!, runId),
    });
  },
  start: (app) => app.sequences.start(),
  stop: (app) => app.sequences.stop(),
};
