// The central error handler and the 404 handler: every API failure leaves as the envelope. Bad input
// answers 400 naming the field; an unexpected failure answers 500 "Server Error" and is logged with
// its stack, which never reaches the client.
import type { FastifyError, FastifyInstance } from 'fastify';
import { type Envelope, ErrorKey, ResultCode } from '#shared/codes.ts';
import { AppError } from '#server/errors.ts';

function envelope<T = null>(
  code: number,
  message: string,
  key: string,
  fields?: Envelope['fields'],
  data?: T,
): Envelope<T | null> {
  return { code, message, data: data ?? null, error: key, ...(fields ? { fields } : {}) };
}

export function installEnvelope(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | AppError | Error, req, reply) => {
    if (err instanceof AppError) {
      if (err.headers) reply.headers(err.headers);
      return reply.status(err.status).send(envelope(err.code, err.message, err.key, err.fields, err.data));
    }
    const fe = err as FastifyError;
    if (fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || (fe.statusCode === 400 && err instanceof SyntaxError)) {
      return reply
        .status(400)
        .send(envelope(ResultCode.BadRequest, 'Malformed JSON in request body', ErrorKey.malformedJson));
    }
    if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return reply
        .status(400)
        .send(envelope(ResultCode.BadRequest, 'Request body is larger than allowed', ErrorKey.bodyTooLarge));
    }
    if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
      return reply.status(400).send(envelope(ResultCode.BadRequest, fe.message, ErrorKey.validation));
    }
    if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
      return reply
        .status(fe.statusCode)
        .send(envelope(fe.statusCode * 100, fe.message || 'Bad request, please check again', ErrorKey.validation));
    }
    req.log.error({ err }, 'unexpected failure');
    return reply.status(500).send(envelope(ResultCode.ServerError, 'Server Error', ErrorKey.server));
  });
}

export function apiNotFound(url: string): Envelope<null> {
  return envelope(ResultCode.NotFound, `No such route: ${url.split('?')[0]}`, ErrorKey.routeNotFound);
}
