// Which host install a local board may run code-server from (code-server.ts), and the config that names it.
import { describe, expect, it } from 'vitest';
import { DEFAULT_CODE_SERVER_DIR, hostCodeServer } from '#server/boards/local/code-server.ts';
import { testConfig } from '#server/config.ts';

describe('hostCodeServer', () => {
  it.each([
    ['no directory', null],
    ['an empty one', ''],
    ['one outside /usr, which boards do not see', '/opt/code-server'],
    ['one that climbs out of /usr', '/usr/../etc/code-server'],
    ['one without an install', '/usr/local/lib/no-such-code-server'],
  ])('finds nothing for %s', (_what, dir) => {
    expect(hostCodeServer(dir)).toBeNull();
  });

  // The host's install (scripts/install-code-server.sh, run by `.ci/run`): no install, a failure.
  it(
    'finds the installed version, its entry point and the host node under /usr',
    () => {
      const cs = hostCodeServer(DEFAULT_CODE_SERVER_DIR);
      expect(cs).toMatchObject({
        entry: `${DEFAULT_CODE_SERVER_DIR}/node_modules/code-server/out/node/entry.js`,
        version: expect.stringMatching(/^4\.99\./),
      });
      expect(cs?.node.startsWith('/usr/')).toBe(true);
    },
  );
});

describe('BIANBU_CODE_SERVER_DIR', () => {
  it('defaults to the install script’s directory and may be emptied', () => {
    expect(testConfig({}).BIANBU_CODE_SERVER_DIR).toBe(DEFAULT_CODE_SERVER_DIR);
    expect(testConfig({ BIANBU_CODE_SERVER_DIR: '' }).BIANBU_CODE_SERVER_DIR).toBe('');
  });

  it.each(['/opt/code-server', 'usr/local/lib/x', '/usr/../etc'])('refuses %s', (dir) => {
    expect(() => testConfig({ BIANBU_CODE_SERVER_DIR: dir })).toThrow(/under \/usr/);
  });
});
