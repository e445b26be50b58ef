// Where `bianbu` keeps its sign-ins: one JSON file in the user's config dir (mode 0600, written
// atomically), holding named profiles — one per service or account — and which one is current.
// BIANBU_URL / BIANBU_API_KEY override the chosen profile for one run (CI), BIANBU_PROFILE or
// --profile chooses another. A file in the older single-profile shape ({url, key, applyId}) reads as
// the profile `default`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Profile {
  url: string;
  key?: string;
  /** Who signed in, as the service answered at login (shown by `bianbu profiles`). */
  username?: string;
  /** How the credential was obtained: an API key, or a browser sign-in's access token. */
  kind?: 'apikey' | 'token';
}

export interface ConfigFile {
  current: string;
  profiles: Record<string, Profile>;
}

/** The profile a command runs with, after the environment's overrides. */
export interface CliConfig extends Profile {
  profile: string;
  applyId?: string;
}

export const DEFAULT_URL = 'http://localhost:8080';

export const configPath = () =>
  process.env.BIANBU_CLI_CONFIG ||
  path.join(process.env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config'), 'bianbu', 'cli.json');

export function readConfigFile(): ConfigFile {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(configPath(), 'utf8'));
  } catch {
    return { current: 'default', profiles: {} };
  }
  const o = (raw ?? {}) as Partial<ConfigFile> & Partial<Profile>;
  if (o.profiles && typeof o.profiles === 'object')
    return { current: o.current || 'default', profiles: o.profiles };
  // The first cli's flat file.
  if (typeof o.url === 'string')
    return { current: 'default', profiles: { default: { url: o.url, key: o.key } } };
  return { current: 'default', profiles: {} };
}

/** Saved atomically (temp file then rename), readable only by the owner: it holds credentials. */
export function writeConfigFile(cfg: ConfigFile): void {
  const file = configPath();
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(cfg, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, file);
}

export function resolveConfig(profileName?: string): CliConfig {
  const file = readConfigFile();
  const name = profileName || process.env.BIANBU_PROFILE || file.current || 'default';
  const saved = file.profiles[name];
  // An empty variable counts as unset, as in most shells' scripts.
  const envUrl = process.env.BIANBU_URL || undefined;
  const envKey = process.env.BIANBU_API_KEY || undefined;
  return {
    profile: name,
    url: envUrl ?? saved?.url ?? DEFAULT_URL,
    key: envKey ?? saved?.key,
    username: envKey ? undefined : saved?.username,
    kind: envKey ? 'apikey' : saved?.kind,
  };
}

export function saveProfile(name: string, profile: Profile, makeCurrent = true): void {
  const file = readConfigFile();
  file.profiles[name] = profile;
  if (makeCurrent) file.current = name;
  writeConfigFile(file);
}

export function removeProfile(name: string): boolean {
  const file = readConfigFile();
  if (!file.profiles[name]) return false;
  delete file.profiles[name];
  if (file.current === name) file.current = Object.keys(file.profiles)[0] ?? 'default';
  writeConfigFile(file);
  return true;
}
