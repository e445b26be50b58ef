// The shape of one HTTP call of the contract. Every call of spec section 7 is declared once with
// `defineCall` in the shared module of its feature; the server registers and validates routes from
// these declarations, the web client and the cli type their calls from them.
import { z } from 'zod';
import { HTTP_TIMEOUT_MS, TRANSFER_TIMEOUT_MS } from './constants.ts';

export type HttpMethod = 'GET' | 'POST';

/** Who may call: anyone, any signed-in user, or holders of the given permission entries. */
export type CallAuth = 'public' | 'user';

/** How the request payload travels: query string (GET), JSON body, urlencoded form, multipart upload. */
export type PayloadKind = 'query' | 'json' | 'form' | 'multipart';

/** How the answer travels: the JSON envelope, or a raw byte stream (downloads). */
export type AnswerKind = 'envelope' | 'stream';

export interface CallDef<
  Name extends string = string,
  Req extends z.ZodType = z.ZodType,
  Res extends z.ZodType = z.ZodType,
> {
  name: Name;
  method: HttpMethod;
  path: string;
  request: Req;
  response: Res;
  /** The call acts on the board of the caller's apply: ApplyAccess (or `applyId` in the payload) is checked. */
  needsApply: boolean;
  auth: CallAuth;
  /** Permission entries required (spec section 6 matching); undefined means none beyond `auth`. */
  perms?: readonly string[];
  payload: PayloadKind;
  answer: AnswerKind;
  /** Larger body limit or longer timeout: file transfers (spec section 9: 600000 ms). */
  transfer?: boolean;
  /** Body limit in bytes for this call when it differs from the service default. */
  bodyLimit?: number;
  /** Client timeout when the call legitimately takes longer than the 5000 ms default (a power cycle). */
  timeoutMs?: number;
  /** A POST that changes nothing (a listing): left out of the audit log, so the console may poll it. */
  readOnly?: boolean;
  summary: string;
}

export interface CallOptions<Name extends string, Req extends z.ZodType, Res extends z.ZodType> {
  name: Name;
  method: HttpMethod;
  path: string;
  request?: Req;
  response?: Res;
  needsApply?: boolean;
  auth?: CallAuth;
  perms?: readonly string[];
  payload?: PayloadKind;
  answer?: AnswerKind;
  transfer?: boolean;
  bodyLimit?: number;
  timeoutMs?: number;
  readOnly?: boolean;
  summary: string;
}

const emptyObject = z.object({});

export function defineCall<
  Name extends string,
  Req extends z.ZodType = typeof emptyObject,
  Res extends z.ZodType = z.ZodNull,
>(opts: CallOptions<Name, Req, Res>): CallDef<Name, Req, Res> {
  return {
    name: opts.name,
    method: opts.method,
    path: opts.path,
    request: (opts.request ?? emptyObject) as Req,
    response: (opts.response ?? z.null()) as Res,
    needsApply: opts.needsApply ?? false,
    auth: opts.auth ?? 'user',
    perms: opts.perms,
    payload: opts.payload ?? (opts.method === 'GET' ? 'query' : 'json'),
    answer: opts.answer ?? 'envelope',
    transfer: opts.transfer,
    bodyLimit: opts.bodyLimit,
    timeoutMs: opts.timeoutMs,
    readOnly: opts.readOnly,
    summary: opts.summary,
  };
}

export type RequestOf<C extends CallDef> = z.input<C['request']>;
export type ParsedRequestOf<C extends CallDef> = z.output<C['request']>;
export type ResponseOf<C extends CallDef> = z.output<C['response']>;

/** Metadata answered by `OPTIONS <path>` (spec section 7: "OPTIONS given URL, metadata returned"). */
export interface CallMetadata {
  name: string;
  method: HttpMethod;
  path: string;
  summary: string;
  needsApply: boolean;
  auth: CallAuth;
  perms: readonly string[];
  payload: PayloadKind;
  answer: AnswerKind;
  request: unknown;
  response: unknown;
}

export function callMetadata(call: CallDef): CallMetadata {
  return {
    name: call.name,
    method: call.method,
    path: call.path,
    summary: call.summary,
    needsApply: call.needsApply,
    auth: call.auth,
    perms: call.perms ?? [],
    payload: call.payload,
    answer: call.answer,
    request: toJsonSchema(call.request, 'input'),
    response: toJsonSchema(call.response, 'output'),
  };
}

function toJsonSchema(schema: z.ZodType, io: 'input' | 'output'): unknown {
  try {
    return z.toJSONSchema(schema, { io, unrepresentable: 'any' });
  } catch {
    return {};
  }
}

/** How long a client waits for this call (spec section 9: 5000 ms, 600000 ms for transfers). */
export function callTimeoutMs(call: Pick<CallDef, 'transfer' | 'timeoutMs'>): number {
  return call.timeoutMs ?? (call.transfer ? TRANSFER_TIMEOUT_MS : HTTP_TIMEOUT_MS);
}
