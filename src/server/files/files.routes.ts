// The files feature: the calls of spec section 7 on the board of the caller's apply. Every call but
// downloadFile names its board through the apply (register.ts resolves it into ctx.apply); downloadFile
// names a deviceId, which must be the board of the apply the caller holds (ApplyAccess header), and is
// answered "not found" otherwise, the same as for a board that does not exist.
import type { FastifyInstance } from 'fastify';
import type { BoardDriver } from '#server/boards/driver.ts';
import { AppError, notFound } from '#server/errors.ts';
import type { Feature } from '#server/feature.ts';
import { type CallContext, implement, type ResolvedApply } from '#server/http/handlers.ts';
import { ResultCode } from '#shared/codes.ts';
import { fileCalls, parentOf } from '#shared/files.ts';
import { FileService, resolvePath } from './files.service.ts';
import { stopTransfersOnApplyClose, trackTransfer } from './inflight.ts';
import { receiveUpload, sendDownload } from './transfer.ts';

const stopListening = new WeakMap<object, () => void>();

function driverOf(app: FastifyInstance, deviceId: string): BoardDriver {
  return app.boards.driver(deviceId);
}

function held(ctx: CallContext): ResolvedApply {
  if (!ctx.apply) throw notFound();
  return ctx.apply;
}

const serviceOf = (ctx: CallContext) => new FileService(driverOf(ctx.app, held(ctx).deviceId));

export const filesFeature: Feature = {
  name: 'files',
  calls: (app) =>
    implement(fileCalls, {
      fileBrowser: async ({ path, dir }, ctx) => serviceOf(ctx).list(resolvePath(path || '/', dir)),
      fileRead: async ({ path, dir, encoding }, ctx) => serviceOf(ctx).read(resolvePath(path, dir), encoding),
      fileWrite: async ({ path, dir, data, encoding, expectedHash }, ctx) =>
        serviceOf(ctx).write(resolvePath(path, dir), data, encoding, expectedHash),
      removeFile: async ({ path, dir, recursive, confirm }, ctx) =>
        serviceOf(ctx).remove(resolvePath(path, dir), { recursive, confirm }),
      fileMkdir: async ({ path, dir }, ctx) => serviceOf(ctx).mkdir(resolvePath(path, dir)),
      fileRename: async ({ path, dir, to }, ctx) => {
        const from = resolvePath(path, dir);
        // A bare new name stays in the same folder; a path is resolved like any other.
        return serviceOf(ctx).rename(from, resolvePath(to, dir ?? parentOf(from)));
      },
      uploadFile: async (_input, ctx) => {
        const stop = new AbortController();
        const untrack = trackTransfer(app, held(ctx).applyId, (err) => stop.abort(err));
        try {
          return await receiveUpload(ctx.req, ctx.reply, {
            driver: driverOf(app, held(ctx).deviceId),
            applyId: held(ctx).applyId,
            timeoutMs: app.config.BIANBU_TRANSFER_TIMEOUT_MS,
            signal: stop.signal,
          });
        } finally {
          untrack();
        }
      },
      downloadFile: async ({ deviceId, filePath }, ctx) => {
        if (!app.resolveApply)
          throw new AppError(503, ResultCode.Unavailable, 'apply.unavailable', 'Applies are not available');
        const apply = await app.resolveApply(ctx, {});
        if (apply.deviceId !== deviceId) throw notFound();
        ctx.apply = apply;
        const one = (h: string | string[] | undefined) => (Array.isArray(h) ? h[0] : h);
        const out = await sendDownload(
          driverOf(app, deviceId),
          filePath,
          ctx.reply,
          app.config.BIANBU_TRANSFER_TIMEOUT_MS,
          {
            range: one(ctx.req.headers.range),
            ifRange: one(ctx.req.headers['if-range']),
          },
        );
        // The apply closing (unapply, lease end, share revoked) cuts the download where it is.
        const untrack = trackTransfer(app, apply.applyId, (err) => out.destroy(err));
        out.on('close', untrack);
        return out;
      },
    }),
  async start(app) {
    const off = await stopTransfersOnApplyClose(app);
    if (off) stopListening.set(app, off);
  },
  stop(app) {
    stopListening.get(app)?.();
  },
};
