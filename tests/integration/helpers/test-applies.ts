// TEST-ONLY apply resolver for the realtime tests while they run without the lease lifecycle: an
// apply is a row the test registers (applyId → device and user); resolution checks the caller owns
// it, answering "not found" otherwise, as the lifecycle's resolver does.
import type { FastifyInstance } from 'fastify';
import { notFound } from '#server/errors.ts';
import type { Feature } from '#server/feature.ts';
import type { CallContext, ResolvedApply } from '#server/http/handlers.ts';

export function testAppliesFeature(): Feature & { applies: Map<string, ResolvedApply> } {
  const applies = new Map<string, ResolvedApply>();
  return {
    name: 'test-applies',
    applies,
    setup(app: FastifyInstance) {
      app.decorate('resolveApply', async (ctx: CallContext, input: unknown) => {
        const id =
          (input as { applyId?: string } | null)?.applyId ?? String(ctx.req.headers.applyaccess ?? '');
        const a = applies.get(id);
        if (!a || !ctx.user || a.userId !== ctx.user.id) throw notFound('Apply not found', 'apply.invalid');
        return a;
      });
    },
  };
}
