import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '#server/config.ts';

describe('configuration from the environment', () => {
  it('takes the documented defaults when nothing is set', () => {
    const c = loadConfig({});
    expect(c.PORT).toBe(8080);
    expect(c.BIANBU_DATA_DIR).toBe('./data');
    expect(c.dataDir.endsWith('/data')).toBe(true);
    expect(c.DATABASE_URL).toBeUndefined();
  });

  it.each([
    ['PORT', 'abc', /PORT="abc"/],
    ['PORT', '70000', /PORT="70000"/],
    ['DATABASE_URL', 'mysql://x', /DATABASE_URL=.*postgres/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL/],
    ['BIANBU_ALLOW_UNSANDBOXED', 'maybe', /BIANBU_ALLOW_UNSANDBOXED/],
  ])('refuses %s=%s with one line naming it', (name, value, pattern) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    try {
      loadConfig({ [name]: value });
    } catch (err) {
      expect((err as Error).message).toMatch(pattern);
      expect((err as Error).message).not.toContain('\n');
    }
  });

  it('reads booleans in their usual spellings', () => {
    expect(loadConfig({ BIANBU_SINGLE_SESSION: 'true' }).BIANBU_SINGLE_SESSION).toBe(true);
    expect(loadConfig({ BIANBU_SINGLE_SESSION: '0' }).BIANBU_SINGLE_SESSION).toBe(false);
  });
});

describe('the code window defaults', () => {
  it('leaves BIANBU_CODE_PORT to its default (the console port + 1), takes off, a port, and refuses others', () => {
    expect(loadConfig({}).BIANBU_CODE_PORT).toBeUndefined();
    expect(loadConfig({ BIANBU_CODE_PORT: '' }).BIANBU_CODE_PORT).toBeUndefined();
    expect(loadConfig({ BIANBU_CODE_PORT: 'off' }).BIANBU_CODE_PORT).toBe('off');
    expect(loadConfig({ BIANBU_CODE_PORT: '9000' }).BIANBU_CODE_PORT).toBe(9000);
    expect(() => loadConfig({ BIANBU_CODE_PORT: 'on' })).toThrow(/BIANBU_CODE_PORT="on".*off/);
    expect(() => loadConfig({ BIANBU_CODE_PORT: '70000' })).toThrow(/BIANBU_CODE_PORT/);
  });

  it('installs code-server on a start by default, never from a test config', async () => {
    expect(loadConfig({}).BIANBU_CODE_SERVER_INSTALL).toBe('auto');
    expect(loadConfig({ BIANBU_CODE_SERVER_INSTALL: 'off' }).BIANBU_CODE_SERVER_INSTALL).toBe('off');
    const { testConfig } = await import('#server/config.ts');
    expect(testConfig().BIANBU_CODE_SERVER_INSTALL).toBe('off');
  });
});
