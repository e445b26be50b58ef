// What a board may answer through the /code/ proxy: cookies moved under its path, redirects kept
// inside it, host-wide headers dropped; and what reaches the board.
import { describe, expect, it } from 'vitest';
import {
  cookieValue,
  headersFromBoard,
  headersToBoard,
  RedirectRefused,
  scopeLocation,
  scopeSetCookie,
  withoutCookie,
} from '#server/desktop/code-headers.ts';
import { codeRouteOf } from '#server/desktop/code-proxy.ts';

const prefix = '/code/a1/k1';
const codeOrigin = 'http://host:8081';
const o = { codeOrigin, prefix, requestPath: '/dir/page', boardHosts: ['127.0.0.1:8080', 'localhost:8080'] };

describe('scopeSetCookie', () => {
  it.each([
    ['a=1', `a=1; Path=${prefix}/`],
    ['a=1; Path=/', `a=1; Path=${prefix}/`],
    ['a=1; Path=/x; Domain=host; Secure', `a=1; Path=${prefix}/x; Secure`],
    ['a=1; path=/../../b', `a=1; Path=${prefix}/`],
    ['a=1; Path=relative', `a=1; Path=${prefix}/`],
    ['a=1; Max-Age=5; SameSite=None', `a=1; Path=${prefix}/; Max-Age=5; SameSite=None`],
    ['bianbu_code=x; Path=/', null],
    ['__Host-a=1; Path=/; Secure', null],
    ['__host-a=1', null],
    ['=nameless', null],
    ['novalue', null],
  ])('%s → %s', (input, out) => {
    expect(scopeSetCookie(input, prefix)).toBe(out);
  });
});

describe('scopeLocation', () => {
  it.each([
    ['/inside', `${prefix}/inside`],
    [`${prefix}/already`, `${prefix}/already`],
    ['sibling?q=1#h', `${prefix}/dir/sibling?q=1#h`],
    ['../up', `${prefix}/up`],
    ['http://127.0.0.1:8080/y', `${prefix}/y`],
    [`${codeOrigin}${prefix}/z`, `${prefix}/z`],
    ['../../../../code/b2/k2/', null],
    ['/..%2f..%2fx', `${prefix}/..%2f..%2fx`],
    [`${codeOrigin}/code/b2/k2/`, null],
    ['https://evil.example/', null],
    ['//evil.example/x', null],
    ['/\\evil.example', null],
    ['javascript:alert(1)', null],
    ['http://127.0.0.1:9999/', null],
  ])('%s → %s', (input, out) => {
    expect(scopeLocation(input, o)).toBe(out);
  });
});

describe('headersFromBoard', () => {
  it('drops hop-by-hop and host-wide headers, adds the CSP, and refuses an outside redirect', () => {
    const h = headersFromBoard(
      {
        connection: 'keep-alive, x-secret',
        'x-secret': '1',
        'transfer-encoding': 'chunked',
        'strict-transport-security': 'max-age=1',
        'clear-site-data': '"*"',
        'service-worker-allowed': '/../../..',
        'access-control-allow-origin': '*',
        'content-type': 'text/html',
        'set-cookie': ['a=1; Domain=host', 'bianbu_code=x'],
      },
      { ...o, consoleOrigin: 'http://host:8080' },
    );
    expect(h).toEqual({
      'content-type': 'text/html',
      'set-cookie': [`a=1; Path=${prefix}/`],
      'content-security-policy': "frame-ancestors 'self' http://host:8080; base-uri 'self'; form-action 'self'",
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
    });
    expect(() =>
      headersFromBoard({ location: 'https://evil.example' }, { ...o, consoleOrigin: 'http://host:8080' }),
    ).toThrow(RedirectRefused);
    // code-server's service worker asks for the board's root: it gets the board's path, no more.
    for (const [asked, given] of [
      ['/', `${prefix}/`],
      ['../..', undefined],
      ['https://evil.example/', undefined],
    ])
      expect(
        headersFromBoard({ 'service-worker-allowed': asked }, { ...o, consoleOrigin: 'http://host:8080' })[
          'service-worker-allowed'
        ],
        asked,
      ).toBe(given);
  });
});

describe('towards the board', () => {
  it('removes our cookie, hop-by-hop headers and the client’s forwarding claims', () => {
    const h = headersToBoard(
      {
        host: 'host:8081',
        cookie: 'x=1; bianbu_code=secret; y=2',
        connection: 'close, x-hop',
        'x-hop': '1',
        'x-forwarded-for': '6.6.6.6',
        forwarded: 'for=6.6.6.6',
        accept: '*/*',
      },
      { proto: 'http', host: 'host:8081', prefix },
    );
    expect(h).toEqual({
      host: 'host:8081',
      cookie: 'x=1; y=2',
      accept: '*/*',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'host:8081',
      'x-forwarded-prefix': prefix,
    });
    expect(withoutCookie('bianbu_code=1', 'bianbu_code')).toBe('');
    expect(cookieValue('a=1; bianbu_code=v=2', 'bianbu_code')).toBe('v=2');
    expect(cookieValue('a=1', 'bianbu_code')).toBeNull();
  });
});

describe('codeRouteOf', () => {
  it.each([
    ['/code/a1/', { applyId: 'a1', key: null, rest: '/', search: '' }],
    ['/code/a1?ticket=t', { applyId: 'a1', key: null, rest: '/', search: '?ticket=t' }],
    ['/code/a1/k1', { applyId: 'a1', key: 'k1', rest: '/', search: '' }],
    ['/code/a1/k1/x/y?z', { applyId: 'a1', key: 'k1', rest: '/x/y', search: '?z' }],
    ['/code/', null],
    ['/code/a%2e1/', null],
    ['/vnc/a1', null],
    ['/code/a1/k.1/', null],
  ])('%s', (url, out) => {
    expect(codeRouteOf(url)).toEqual(out);
  });
});
