// Configuration from the environment, validated once at start. A bad value stops the start with one
// line naming the variable and what is wrong with it.
import path from 'node:path';
import { z } from 'zod';
import { validCodeHostPattern } from './desktop/code-hosts.ts';
import { invalidProxyEntry, parseTrustedProxies } from './http/trusted-proxies.ts';

const bool = z
  .enum(['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off', ''])
  .transform((v) => v === '1' || v === 'true' || v === 'yes' || v === 'on');

const configSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  BIANBU_DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// URL')
    .optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Public origin of the console (for OIDC redirects and the WebSocket Origin check). */
  BIANBU_PUBLIC_URL: z.string().url('must be an absolute URL such as http://localhost:8080').optional(),
  /** Extra origins allowed to open the realtime socket, comma separated. */
  BIANBU_ALLOWED_ORIGINS: z.string().default(''),
  /**
   * Reverse proxies whose X-Forwarded-For/-Proto/-Host are believed: addresses or CIDR ranges,
   * comma separated. Empty: none, the socket address is the client.
   */
  BIANBU_TRUSTED_PROXIES: z
    .string()
    .default('')
    .refine((v) => invalidProxyEntry(v) === undefined, {
      error: (issue) =>
        `"${invalidProxyEntry(String(issue.input))}" is not an IP address or CIDR range (list them comma separated)`,
    })
    .transform(parseTrustedProxies),
  /** Heart-beat interval the realtime server asks of clients (spec: 20000); silence of twice that ends a session. */
  BIANBU_STOMP_HEARTBEAT_MS: z.coerce.number().int().min(100).max(600_000).default(20_000),
  /**
   * Local boards' shells through the WebSocket relay (relay.c, docs/native-data-plane.md): a keystroke
   * and its echo pass through a small C process instead of the service's JavaScript. `off`: the
   * service serves every shell itself, as it does for clients on TLS and boards over SSH.
   */
  BIANBU_WS_RELAY: z.enum(['on', 'off']).default('on'),
  BIANBU_ROUTE_SET: z.enum(['full', 'reduced']).default('full'),
  BIANBU_DOCS_URL: z.string().default('https://bianbu.spacemit.com'),
  BIANBU_ADMIN_PASSWORD: z.string().min(8, 'must be at least 8 characters').optional(),
  BIANBU_BODY_LIMIT: z.coerce.number().int().min(1024).default(1_048_576),
  BIANBU_LAB_FILE: z.string().optional(),
  /**
   * Whether this instance runs boards itself (its lab file or the default lab). 0: it runs none and
   * serves the boards of board hosts that dial in (docs/board-hosts.md), as any other instance does.
   */
  BIANBU_LOCAL_BOARDS: bool.default(true),
  /**
   * Where board hosts reach this instance itself (e.g. https://10.0.0.2:8443) when several instances
   * serve one farm: each host holds a link to every instance so any of them reaches any board.
   */
  BIANBU_INSTANCE_URL: z.string().url('must be an absolute URL such as https://10.0.0.2:8443').optional(),
  /** PEM certificate and key: the service serves HTTPS (and board hosts' links over TLS) itself. */
  BIANBU_TLS_CERT: z.string().min(1).optional(),
  BIANBU_TLS_KEY: z.string().min(1).optional(),
  BIANBU_ALLOW_UNSANDBOXED: bool.default(false),
  /** Host directory of board plugin executables (default <data dir>/plugins). */
  BIANBU_PLUGINS_DIR: z.string().min(1).optional(),
  BIANBU_PROBE_INTERVAL_MS: z.coerce.number().int().min(200).max(600_000).default(5_000),
  BIANBU_METRICS_INTERVAL_MS: z.coerce.number().int().min(200).max(600_000).default(5_000),
  /** Metrics samples are kept at least 24 hours. */
  BIANBU_METRICS_RETENTION_HOURS: z.coerce.number().min(24, 'must be at least 24').default(24),
  BIANBU_SINGLE_SESSION: bool.default(false),
  BIANBU_TOKEN_TTL_HOURS: z.coerce
    .number()
    .positive()
    .default(24 * 7),
  XPACK_ENABLED: bool.default(false),
  OIDC_ISSUER: z.string().url().optional(),
  OIDC_CLIENT_ID: z.string().optional(),
  OIDC_CLIENT_SECRET: z.string().optional(),
  OIDC_REDIRECT_URI: z.string().url().optional(),
  /** Serve the built console from this folder (default dist/web). */
  BIANBU_WEB_DIR: z.string().default('dist/web'),
  /** Longest sleep of the lease expiry scheduler between ticks (it wakes earlier when a lease is due); 0 stops it. */
  BIANBU_LEASE_TICK_MS: z.coerce.number().int().min(0).max(3_600_000).default(30_000),
  /** Longest wait of an entry in the waiting line for boards, in hours (at most 30 days). */
  BIANBU_QUEUE_MAX_WAIT_HOURS: z.coerce
    .number()
    .positive('must be more than 0')
    .max(720, 'must be at most 720 (30 days)')
    .default(24),
  BIANBU_LICENSE_EXPIRES: z.iso.date('must be a date YYYY-MM-DD').default('2099-12-31'),
  BIANBU_LICENSE_CORPORATION: z.string().default('Bianbu Cloud Community'),
  BIANBU_LICENSE_ASSETS: z.coerce.number().int().min(0).default(1000),
  /** Where /register sends the browser when an external provider is used (default: its authorize URL with prompt=create). */
  OIDC_REGISTER_URL: z.string().url().optional(),
  /** The embedded provider offers self-registration. */
  BIANBU_OPEN_REGISTRATION: bool.default(true),
  /** A phone sign-in with a number no account has creates one in the default organisation. */
  BIANBU_PHONE_SIGNUP: bool.default(true),
  /** Upload and download deadline (spec section 9: 600000 ms). */
  BIANBU_TRANSFER_TIMEOUT_MS: z.coerce.number().int().min(1000).default(600_000),
  /** Flash jobs that write at once on this instance; the others wait PENDING in order. */
  BIANBU_FLASH_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /** Bytes of private images one user may keep, in MiB. */
  BIANBU_FLASH_USER_QUOTA_MB: z.coerce.number().int().min(0).default(2048),
  /** How long a flashed board may take to answer on its new image. */
  BIANBU_FLASH_BOOT_TIMEOUT_MS: z.coerce.number().int().min(1000).default(120_000),
  /**
   * Directory of the riscv64 board disk images scripts/board-images/build.sh builds (default
   * <data dir>/images/board); its Debian images join the catalogue as built-in images.
   */
  BIANBU_BOARD_IMAGES: z.string().min(1).optional(),
  /**
   * riscv64 QEMU boards in the default lab of a first start (0..8). Unset: sized from the host (one per
   * core, at least 2) when qemu-system-riscv64, OpenSBI and U-Boot are installed, else none.
   */
  BIANBU_RISCV_BOARDS: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.coerce.number().int().min(0).max(8).optional(),
  ),
  /**
   * Port of the second listener that serves the /code/ proxy to boards' code-servers on an origin of
   * its own (board JavaScript never runs on the console's origin). Unset: the console's PORT + 1
   * (8081), or any free port when that one is taken or PORT is 0. `off`: no code proxy, the code
   * window offers the built-in editor. 0: any free port (tests).
   */
  BIANBU_CODE_PORT: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .union([z.literal('off'), z.coerce.number().int().min(0).max(65535)], {
        error: 'must be a port number (0: any free port) or off',
      })
      .optional(),
  ),
  /**
   * `auto`: a start as root that finds no code-server under BIANBU_CODE_SERVER_DIR installs it in the
   * background (scripts/install-code-server.sh, about a minute; its steps in the log), and the code
   * window says so meanwhile. `off`: never.
   */
  BIANBU_CODE_SERVER_INSTALL: z.enum(['auto', 'off']).default('auto'),
  /**
   * The host's code-server install (scripts/install-code-server.sh), which local boards start inside
   * themselves on the code window's first use. Must be under /usr (the tree boards see); empty: none,
   * the code window shows only what answers on a board's code port, else offers the built-in editor.
   */
  BIANBU_CODE_SERVER_DIR: z
    .string()
    .default('/usr/local/lib/bianbu-code-server')
    .refine(
      (v) => v === '' || (/^\/usr\//.test(v) && !v.split('/').includes('..')),
      "must be a directory under /usr/ (boards see only the host's /usr), or empty",
    ),
  /**
   * The code window's host name, never the console's (browsers share cookies across ports):
   * `*.code.example.com` gives each apply a subdomain of its own (wildcard DNS), `code.example.com`
   * one name for all. Unset: `*.code.localhost` for a console reached on localhost / 127.0.0.1, and
   * no code window on any other name. Scheme and port are the console's and BIANBU_CODE_PORT.
   */
  BIANBU_CODE_HOST: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .string()
      .refine(
        validCodeHostPattern,
        'must be a lower-case host name such as code.example.com or *.code.example.com',
      )
      .optional(),
  ),
  /**
   * Public origin of that listener when a reverse proxy serves it, e.g. https://*.code.example.com
   * (a subdomain per apply) or https://code.example.com; the same rules as BIANBU_CODE_HOST.
   */
  BIANBU_CODE_ORIGIN: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .string()
      .url('must be an absolute URL such as https://code.example.com')
      .refine((v) => /^https?:$/.test(new URL(v).protocol), 'must be an http:// or https:// URL')
      .refine(
        (v) => validCodeHostPattern(new URL(v).hostname),
        'must name a host such as https://code.example.com or https://*.code.example.com',
      )
      .transform((v) => new URL(v).origin)
      .optional(),
  ),
});

export type Config = z.infer<typeof configSchema> & { dataDir: string };

export class ConfigError extends Error {}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const input = Object.fromEntries(
    Object.keys(configSchema.shape).flatMap((k) => (env[k] === undefined ? [] : [[k, env[k]]])),
  );
  const parsed = configSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue.path[0] ?? 'environment');
    throw new ConfigError(`Invalid ${name}=${JSON.stringify(env[name] ?? '')}: ${issue.message}`);
  }
  return { ...parsed.data, dataDir: path.resolve(parsed.data.BIANBU_DATA_DIR) };
}

/** A config for tests: defaults plus overrides, no environment read. */
export function testConfig(
  overrides: Partial<Record<keyof z.infer<typeof configSchema>, string>> = {},
): Config {
  // No riscv64 QEMU boards in a test's default lab unless it asks: each boots for a minute.
  // Nor a code-server install started by a test's app.
  return loadConfig({
    LOG_LEVEL: 'silent',
    PORT: '0',
    BIANBU_RISCV_BOARDS: '0',
    BIANBU_CODE_SERVER_INSTALL: 'off',
    ...overrides,
  });
}
