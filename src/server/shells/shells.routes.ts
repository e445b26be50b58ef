// apply-device-shell / unapply-device-shell: open and close a shell on the board of the caller's
// apply; device-shell-job: whether one runs a foreground job. The bytes then travel over the
// realtime channel (see src/shared/realtime.ts).
import type { FastifyInstance } from 'fastify';
import type { BoardDriver } from '#server/boards/driver.ts';
import { AppError } from '#server/errors.ts';
import { implement } from '#server/http/handlers.ts';
import { ResultCode } from '#shared/codes.ts';
import { shellCalls, shellErrorKeys } from '#shared/shells.ts';
import type { DriverLookup } from './manager.ts';

/** The board drivers of the app (the boards feature decorates `app.boards`). */
export function driverLookup(app: FastifyInstance): DriverLookup {
  return (deviceId) => {
    const boards = (app as unknown as { boards?: { driver(id: string): BoardDriver | Promise<BoardDriver> } })
      .boards;
    if (!boards)
      throw new AppError(
        503,
        ResultCode.Unavailable,
        shellErrorKeys.boardUnavailable,
        'Boards are not available',
      );
    return boards.driver(deviceId);
  };
}

export function shellRoutes(app: FastifyInstance) {
  return implement(shellCalls, {
    applyDeviceShell: async (input, ctx) => {
      const apply = ctx.apply!;
      const size = input.cols && input.rows ? { cols: input.cols, rows: input.rows } : undefined;
      const { clientId } = await app.shells.open({
        applyId: apply.applyId,
        deviceId: apply.deviceId,
        userId: apply.userId,
        shellType: input.shellType,
        size,
        credentialId: ctx.user?.credentialId || undefined,
      });
      return { clientId, shellType: input.shellType };
    },
    unapplyDeviceShell: async (input, ctx) => {
      await app.shells.close(ctx.apply!.applyId, input.clientId);
      return null;
    },
    deviceShellJob: (input, ctx) => app.shells.job(ctx.apply!.applyId, input.clientId),
  });
}
