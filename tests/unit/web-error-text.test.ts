import { describe, expect, it } from 'vitest';
import { errorText, statusKey, type Words } from '#web/api/error-text.ts';

const words: Words = {
  serverError: 'SERVER ERROR TEXT',
  status: (s) => `status ${s}`,
  errorKey: (key) => ({ 'request.invalid': 'Worded invalid request' })[key],
};

describe('error text extraction (spec section 8)', () => {
  const cases: { name: string; status: number; body: unknown; want: string }[] = [
    {
      name: 'HTTP 500 always shows the server-error text',
      status: 500,
      body: { error: 'boom', msg: 'x' },
      want: 'SERVER ERROR TEXT',
    },
    {
      name: 'a plain `error` text comes first',
      status: 400,
      body: { error: 'bad thing', msg: 'm', detail: 'd' },
      want: 'bad thing',
    },
    {
      name: 'an error key is worded through the catalogue',
      status: 400,
      body: { error: 'request.invalid', message: 'Invalid x' },
      want: 'Worded invalid request',
    },
    {
      name: 'an unknown error key falls back to the server message',
      status: 400,
      body: { error: 'lease.none_free', message: 'No board is free' },
      want: 'No board is free',
    },
    {
      name: '`msg` follows `error`',
      status: 400,
      body: { msg: 'from msg', detail: 'from detail' },
      want: 'from msg',
    },
    { name: '`detail` follows `msg`', status: 403, body: { detail: 'from detail' }, want: 'from detail' },
    {
      name: 'non_field_errors are joined with spaces',
      status: 400,
      body: { non_field_errors: ['one.', 'two.'] },
      want: 'one. two.',
    },
    {
      name: 'an array body is joined with "; "',
      status: 400,
      body: ['first', 'second', 'third'],
      want: 'first; second; third',
    },
    {
      name: 'nested arrays and objects in an array body are flattened',
      status: 400,
      body: [['a', 'b'], { name: ['required'] }],
      want: 'a; b; name: required',
    },
    { name: 'a plain string body is used as is', status: 400, body: 'plain text', want: 'plain text' },
    {
      name: 'an HTML error page is not shown',
      status: 502,
      body: '<html>bad gateway</html>',
      want: 'status 502',
    },
    {
      name: 'an empty body falls back to the status message',
      status: 404,
      body: undefined,
      want: 'status 404',
    },
    {
      name: 'an object without readable fields falls back to the status message',
      status: 429,
      body: { foo: 1 },
      want: 'status 429',
    },
    {
      name: 'the envelope message is used when nothing else is there',
      status: 409,
      body: { code: 40900, message: 'Name taken' },
      want: 'Name taken',
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(errorText(c.status, c.body, words)).toBe(c.want);
    });
  }

  it('names a catalogue key for every status of spec section 8 and one for the rest', () => {
    for (const s of [400, 401, 403, 404, 408, 429, 500, 501, 502, 503, 504, 505])
      expect(statusKey(s)).toBe(`status.${s}`);
    expect(statusKey(418)).toBe('status.other');
    expect(statusKey(0)).toBe('status.noResponse');
  });
});
