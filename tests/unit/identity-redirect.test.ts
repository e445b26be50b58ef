import { describe, expect, it } from 'vitest';
import { consoleRedirectAllowed } from '#server/identity/idp.ts';

describe('console sign-in return targets', () => {
  const pub = 'https://cloud.example.com';
  it.each([
    ['https://cloud.example.com/mainboard', true],
    ['https://cloud.example.com/', true],
    ['https://cloud.example.com', false],
    ['https://cloud.example.com/mainboard/', false],
    ['https://cloud.example.com/mainboard/x', false],
    ['https://cloud.example.com/mainboardx', false],
    ['https://cloud.example.com/mainboard?x=1', false],
    ['https://cloud.example.com/mainboard#x', false],
    ['https://cloud.example.com/workbench', false],
    ['http://cloud.example.com/mainboard', false],
    ['https://cloud.example.com.evil.io/mainboard', false],
    ['https://user:pw@cloud.example.com/mainboard', false],
    ['https://cloud.example.com:444/mainboard', false],
    ['//cloud.example.com/mainboard', false],
    ['/mainboard', false],
    ['javascript:alert(1)', false],
  ])('with a public URL, %s → %s', (value, allowed) => {
    expect(consoleRedirectAllowed(value, pub, 'https://other.example')).toBe(allowed);
  });

  it.each([
    ['http://127.0.0.1:8080/mainboard', 'http://127.0.0.1:8080', true],
    ['http://127.0.0.1:8080/', 'http://127.0.0.1:8080', true],
    ['http://127.0.0.1:8081/mainboard', 'http://127.0.0.1:8080', false],
    ['http://localhost:8080/mainboard', 'http://127.0.0.1:8080', false],
    ['http://127.0.0.1:8080/mainboard', undefined, false],
  ])('without a public URL, %s on %s → %s', (value, origin, allowed) => {
    expect(consoleRedirectAllowed(value, undefined, origin)).toBe(allowed);
  });
});
