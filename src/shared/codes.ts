// Result codes of the envelope `{code, message, data}`. 20000 and the 500xx session codes are the
// spec's (section 8); the others are ours, chosen so that code / 100 is the HTTP status they travel with.
export const ResultCode = {
  Success: 20000,
  BadRequest: 40000,
  Unauthorized: 40100,
  Forbidden: 40300,
  NotFound: 40400,
  Conflict: 40900,
  PayloadTooLarge: 41300,
  TooManyRequests: 42900,
  ServerError: 50000,
  NotImplementedByDriver: 50100,
  Unavailable: 50300,
  /** The token is unknown, malformed or revoked. */
  IllegalToken: 50008,
  /** The token was displaced by a newer sign-in of the same user (single-session setting). */
  OtherClientLoggedIn: 50012,
  /** The token has expired. */
  TokenExpired: 50014,
} as const;
export type ResultCode = (typeof ResultCode)[keyof typeof ResultCode];

/** Codes that end the session in the console: it asks to log in again (spec section 8). */
export const SESSION_END_CODES: readonly number[] = [
  ResultCode.IllegalToken,
  ResultCode.OtherClientLoggedIn,
  ResultCode.TokenExpired,
];

/**
 * Stable machine keys a client can switch on; the console words them through `locales/<lng>/errors.json`
 * (key `errors.<key>` with dots kept). Features add their own keys in their own shared module and
 * reuse these for the generic cases.
 */
export const ErrorKey = {
  validation: 'request.invalid',
  malformedJson: 'request.malformed_json',
  bodyTooLarge: 'request.too_large',
  notFound: 'resource.not_found',
  routeNotFound: 'route.not_found',
  unauthorized: 'auth.required',
  forbidden: 'auth.forbidden',
  server: 'server.error',
  tooMany: 'request.too_many',
} as const;
export type ErrorKey = (typeof ErrorKey)[keyof typeof ErrorKey];

export interface FieldIssue {
  path: string;
  message: string;
}

/** The envelope of every API answer. `error` and `fields` are present on failures only. */
export interface Envelope<T = unknown> {
  code: number;
  message: string;
  data: T;
  error?: string;
  fields?: FieldIssue[];
}
