// The one error type the service throws. The error handler (plugins/envelope.ts) turns it into the
// envelope; "not found" and "not yours" are answered the same way so existence is never leaked.
import { ErrorKey, type FieldIssue, ResultCode } from '#shared/codes.ts';

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    readonly key: string,
    message: string,
    readonly fields?: FieldIssue[],
    readonly headers?: Record<string, string>,
    /** Answered as the envelope's `data` (e.g. when the next board frees); null when absent. */
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export const badRequest = (message: string, key: string = ErrorKey.validation, fields?: FieldIssue[]) =>
  new AppError(400, ResultCode.BadRequest, key, message, fields);
export const unauthorized = (message = 'Authentication required') =>
  new AppError(401, ResultCode.Unauthorized, ErrorKey.unauthorized, message);
export const forbidden = (message = 'Bad request, no permission for this operation', key: string = ErrorKey.forbidden) =>
  new AppError(403, ResultCode.Forbidden, key, message);
/** Also the answer for a resource that exists but is not the caller's. */
export const notFound = (message = 'Resource lost or deleted', key: string = ErrorKey.notFound) =>
  new AppError(404, ResultCode.NotFound, key, message);
export const conflict = (message: string, key: string) => new AppError(409, ResultCode.Conflict, key, message);
export const tooMany = (retryAfterSeconds: number, message = 'Too many requests, please try again later') =>
  new AppError(429, ResultCode.TooManyRequests, ErrorKey.tooMany, message, undefined, {
    'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))),
  });
/** Session codes travel with HTTP 200 so the console's envelope rule (not its 401 rule) handles them. */
export const sessionEnded = (code: number, message: string, key: string) => new AppError(200, code, key, message);
