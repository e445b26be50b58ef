// BIANBU_TRUSTED_PROXIES: addresses and CIDR ranges (IPv4, IPv6), comma separated, validated at
// start like every other variable; empty trusts no proxy.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '#server/config.ts';
import { trustProxyOption } from '#server/http/trusted-proxies.ts';

describe('BIANBU_TRUSTED_PROXIES', () => {
  it('trusts no proxy by default', () => {
    const c = loadConfig({});
    expect(c.BIANBU_TRUSTED_PROXIES).toEqual([]);
    expect(trustProxyOption(c.BIANBU_TRUSTED_PROXIES)).toBe(false);
  });

  it.each([
    ['127.0.0.1', ['127.0.0.1']],
    [' 10.0.0.0/8 , ::1,fd00::/8 ', ['10.0.0.0/8', '::1', 'fd00::/8']],
    ['192.168.1.0/24,2001:db8::/32', ['192.168.1.0/24', '2001:db8::/32']],
    ['0.0.0.0/0', ['0.0.0.0/0']],
    ['', []],
    [' , ', []],
  ])('accepts %j', (value, list) => {
    expect(loadConfig({ BIANBU_TRUSTED_PROXIES: value }).BIANBU_TRUSTED_PROXIES).toEqual(list);
  });

  it.each([
    ['loopback', 'loopback'],
    ['127.0.0.1,proxy.example', 'proxy.example'],
    ['10.0.0.0/33', '10.0.0.0/33'],
    ['::1/129', '::1/129'],
    ['10.0.0.0/', '10.0.0.0/'],
    ['10.0.0.0/8/8', '10.0.0.0/8/8'],
    ['256.1.1.1', '256.1.1.1'],
    ['[::1]', '[::1]'],
    ['*', '*'],
  ])('refuses %j with one line naming the variable and the entry', (value, entry) => {
    expect(() => loadConfig({ BIANBU_TRUSTED_PROXIES: value })).toThrow(ConfigError);
    try {
      loadConfig({ BIANBU_TRUSTED_PROXIES: value });
    } catch (err) {
      const message = (err as Error).message;
      expect(message).toMatch(/^Invalid BIANBU_TRUSTED_PROXIES=/);
      expect(message).toContain(`"${entry}" is not an IP address or CIDR range`);
      expect(message).not.toContain('\n');
    }
  });
});
