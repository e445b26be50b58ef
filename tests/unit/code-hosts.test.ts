// Which host names the code window is served on: never the console's, nor one under it; a label per
// apply under a wildcard; the loopback default only for a loopback console; the session cookie's
// attributes by where it can be third-party.
import { describe, expect, it } from 'vitest';
import {
  codeCookieAttributes,
  codeHostRule,
  codeLabel,
  codeOriginOf,
  effectiveRule,
  isLoopbackName,
  matchesCodeHost,
  validCodeHostPattern,
} from '#server/desktop/code-hosts.ts';
import { loadConfig } from '#server/config.ts';

describe('validCodeHostPattern', () => {
  it.each([
    ['code.example.com', true],
    ['*.code.example.com', true],
    ['*.code.localhost', true],
    ['10.0.0.5', true],
    ['*.com', false],
    ['Code.example.com', false],
    ['code.example.com:8081', false],
    ['*.*.example.com', false],
    ['code..example.com', false],
    ['-code.example.com', false],
    ['*.10.0.0.5', false],
    ['', false],
  ])('%s → %s', (v, ok) => expect(validCodeHostPattern(v)).toBe(ok));
});

describe('matchesCodeHost', () => {
  it.each([
    ['*.code.localhost', 'a1b2.code.localhost', true],
    ['*.code.localhost', 'A1B2.CODE.localhost.', true],
    ['*.code.localhost', 'code.localhost', false],
    ['*.code.localhost', 'x.y.code.localhost', false],
    ['*.code.localhost', 'localhost', false],
    ['*.code.localhost', 'evil-code.localhost', false],
    ['code.example.com', 'code.example.com', true],
    ['code.example.com', 'x.code.example.com', false],
  ])('%s serves %s: %s', (pattern, host, ok) => expect(matchesCodeHost(pattern, host)).toBe(ok));
});

describe('isLoopbackName', () => {
  it.each([
    ['localhost', true],
    ['app.localhost', true],
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['[::1]', true],
    ['192.168.1.5', false],
    ['cloud.example.com', false],
    ['localhost.example.com', false],
  ])('%s → %s', (h, ok) => expect(isLoopbackName(h)).toBe(ok));
});

describe('effectiveRule', () => {
  const wild = codeHostRule({ host: '*.code.example.com' });
  const one = codeHostRule({ host: 'code.example.com' });
  it.each([
    // unset: the loopback default for a loopback console, nothing elsewhere
    [null, 'localhost', '*.code.localhost'],
    [null, '127.0.0.1', '*.code.localhost'],
    [null, 'cloud.example.com', null],
    [null, '192.168.1.5', null],
    // a console on a code host name gets no code window
    [null, 'x1.code.localhost', null],
    [wild, 'cloud.example.com', '*.code.example.com'],
    [wild, 'a1.code.example.com', null],
    [wild, 'code.example.com', null],
    // a code host under the console's name could set cookies for it
    [wild, 'example.com', null],
    [one, 'code.example.com', null],
    [one, 'example.com', null],
    [one, 'cloud.example.com', 'code.example.com'],
  ])('%j for a console at %s → %s', (rule, consoleHost, pattern) =>
    expect(effectiveRule(rule, consoleHost)?.pattern ?? null).toBe(pattern),
  );
});

describe('codeOriginOf', () => {
  it('gives each apply a label of its own under a wildcard, with the console’s scheme and the listener’s port', () => {
    const rule = effectiveRule(null, '127.0.0.1')!;
    const a = codeOriginOf(rule, 'apply-A', 'http', 8081);
    expect(a).toBe(`http://${codeLabel('apply-A')}.code.localhost:8081`);
    expect(codeOriginOf(rule, 'apply-B', 'http', 8081)).not.toBe(a);
    expect(codeLabel('Apply_With-Caps')).toMatch(/^a[0-9a-f]{24}$/);
  });

  it('takes scheme and port from BIANBU_CODE_ORIGIN behind a proxy', () => {
    const rule = codeHostRule({ origin: 'https://*.code.example.com' })!;
    expect(codeOriginOf(rule, 'x', 'http', 8081)).toBe(`https://${codeLabel('x')}.code.example.com`);
    const fixed = codeHostRule({ origin: 'https://code.example.com:8443' })!;
    expect(codeOriginOf(fixed, 'x', 'http', 8081)).toBe('https://code.example.com:8443');
  });
});

describe('codeCookieAttributes', () => {
  it.each([
    ['https://a.code.example.com', 'SameSite=None; Secure; Partitioned'],
    ['http://a1.code.localhost:8081', 'SameSite=None; Secure; Partitioned'],
    ['http://code.lan:8081', 'SameSite=Lax'],
  ])('%s → %s', (origin, attrs) => expect(codeCookieAttributes(origin)).toBe(attrs));
});

describe('the config', () => {
  it('accepts a wildcard code host and origin, and refuses a port, a bare suffix or upper case', () => {
    expect(loadConfig({ BIANBU_CODE_HOST: '*.code.example.com' }).BIANBU_CODE_HOST).toBe(
      '*.code.example.com',
    );
    expect(loadConfig({ BIANBU_CODE_ORIGIN: 'https://*.code.example.com/' }).BIANBU_CODE_ORIGIN).toBe(
      'https://*.code.example.com',
    );
    for (const bad of ['code.example.com:8081', '*.com', 'Code.Example.com'])
      expect(() => loadConfig({ BIANBU_CODE_HOST: bad })).toThrow(/BIANBU_CODE_HOST/);
    expect(() => loadConfig({ BIANBU_CODE_ORIGIN: 'https://*.com' })).toThrow(/BIANBU_CODE_ORIGIN/);
  });
});
