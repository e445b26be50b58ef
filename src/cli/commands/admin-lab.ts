// `bianbu admin boards` and `bianbu admin images`: the lab's boards (list with health, add from a
// declaration as the lab file has it, change, maintenance, retire, a riscv64 board's network policy) and
// images for everyone (upload, streamed with its sha256 checked by the service; retire).
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { boardCalls } from '#shared/boards.ts';
import { flashCalls } from '#shared/flash.ts';
import { authHeaders, envelopeError, readEnvelope } from '../client.ts';
import type { Ctx } from '../context.ts';
import { ctxOf } from '../context.ts';
import { fromNetworkError, usage } from '../errors.ts';
import { printJson, printLines, printTable } from '../output.ts';

const B = Object.fromEntries(boardCalls.map((c) => [c.name, c])) as {
  [K in (typeof boardCalls)[number]['name']]: Extract<(typeof boardCalls)[number], { name: K }>;
};
const F = Object.fromEntries(flashCalls.map((c) => [c.name, c])) as {
  [K in (typeof flashCalls)[number]['name']]: Extract<(typeof flashCalls)[number], { name: K }>;
};

const BOARD_JSON = `{"deviceId", "name", "model", "attributes", "state", "driver", "source", "stateReason", "stateChangedAt",
       "retiredAt", "lastSeenAt", "consecutiveFailures", "lastError", "options" (secrets as true), "running"}`;

function readJson(arg: string): unknown {
  const text = arg === '-' ? fs.readFileSync(0, 'utf8') : fs.readFileSync(arg, 'utf8');
  try {
    return JSON.parse(text);
  } catch (e) {
    throw usage(`${arg === '-' ? 'stdin' : arg}: not JSON (${(e as Error).message})`);
  }
}

/** `k=v` pairs to attributes: numbers and booleans as such, the rest as text. */
function attributes(pairs: string[]): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const p of pairs) {
    const at = p.indexOf('=');
    if (at < 1) throw usage(`--attr ${p}: give key=value`);
    const v = p.slice(at + 1);
    out[p.slice(0, at)] =
      v === 'true' ? true : v === 'false' ? false : v !== '' && Number.isFinite(Number(v)) ? Number(v) : v;
  }
  return out;
}

const many = (v: string, prev: string[] = []) => [...prev, v];

async function boardRow(
  ctx: Ctx,
  r: Awaited<ReturnType<typeof ctx.call<typeof B.adminBoardsRetire>>>,
  verb: string,
) {
  if (ctx.json) printJson(r);
  else if (!ctx.quiet)
    process.stdout.write(`${r.deviceId}: ${verb} (${r.retiredAt ? 'retired' : r.state})\n`);
}

export function registerAdminLab(admin: Command): void {
  const boards = admin
    .command('boards')
    .description('the lab’s boards: ls, add, change, maintenance, retire, network');

  boards
    .command('ls')
    .description('every board with its state, health and where it is declared')
    .option('--state <state>', 'only boards in this state')
    .option('--retired', 'retired boards too')
    .addHelpText('after', `\nJSON: {"items": [${BOARD_JSON}]}\nQuiet: device ids.`)
    .action(async (o: { state?: string; retired?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const r = await ctx.call(B.adminBoardsList, {
        state: o.state as never,
        includeRetired: o.retired ? 'true' : undefined,
      });
      if (ctx.json) return printJson(r);
      if (ctx.quiet) return printLines(r.items.map((b) => b.deviceId));
      printTable(
        ['device', 'name', 'driver', 'model', 'state', 'source', 'running', 'failures', 'reason'],
        r.items.map((b) => [
          b.deviceId,
          b.name,
          b.driver,
          b.model,
          b.retiredAt ? 'retired' : b.state,
          b.source,
          b.running ? 'yes' : 'no',
          b.consecutiveFailures,
          b.stateReason ?? b.lastError,
        ]),
      );
    });

  boards
    .command('add <declaration>')
    .description(
      'add a board from its declaration (a JSON file, or - for stdin), as one entry of the lab file',
    )
    .addHelpText(
      'after',
      `
Examples:
  echo '{"id":"rv-9","name":"rv-9","driver":"qemu","attributes":{"cores":2}}' | bianbu admin boards add -

JSON: ${BOARD_JSON}
Exit: 5 with board.exists; 2 when the declaration does not fit the schema (its field is named).`,
    )
    .action(async (file: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const r = await ctx.call(B.adminBoardsAdd, readJson(file) as never);
      await boardRow(ctx, r, 'added');
    });

  boards
    .command('change <device>')
    .description('change a board’s name, model, attributes or driver options')
    .option('--name <name>')
    .option('--model <model>')
    .option('--attr <key=value>', 'replace the attributes with these (repeat)', many)
    .option(
      '--options <file>',
      'replace the driver options with this JSON file (- for stdin); secrets left out are kept',
    )
    .addHelpText('after', `\nJSON: ${BOARD_JSON}`)
    .action(
      async (
        deviceId: string,
        o: { name?: string; model?: string; attr?: string[]; options?: string },
        cmd: Command,
      ) => {
        const ctx = ctxOf(cmd);
        if (!o.name && o.model === undefined && !o.attr && !o.options)
          throw usage('give --name, --model, --attr or --options');
        const r = await ctx.call(B.adminBoardsChange, {
          deviceId,
          name: o.name,
          model: o.model,
          attributes: o.attr ? attributes(o.attr) : undefined,
          options: o.options ? (readJson(o.options) as Record<string, unknown>) : undefined,
        });
        await boardRow(ctx, r, 'changed');
      },
    );

  boards
    .command('maintenance <device> <on|off>')
    .description('put a board into maintenance (no new leases) or bring it back')
    .option('--reason <text>', 'why (shown to administrators)')
    .addHelpText('after', `\nJSON: ${BOARD_JSON}`)
    .action(async (deviceId: string, onOff: string, o: { reason?: string }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      if (onOff !== 'on' && onOff !== 'off') throw usage('say on or off');
      const r = await ctx.call(B.adminBoardsMaintenance, { deviceId, on: onOff === 'on', reason: o.reason });
      await boardRow(ctx, r, onOff === 'on' ? 'in maintenance' : 'back in service');
    });

  boards
    .command('retire <device>')
    .description('take a board out of service; its history is kept (add it again to bring it back)')
    .addHelpText('after', `\nJSON: ${BOARD_JSON}\nExit: 4 with board.unknown.`)
    .action(async (deviceId: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      await boardRow(ctx, await ctx.call(B.adminBoardsRetire, { deviceId }), 'retired');
    });

  boards
    .command('network <device>')
    .description('a riscv64 board’s network policy; with --egress, change it (live, and kept)')
    .option('--egress <none|nat>', 'no outside network, or through the host')
    .option('--allow <cidr>', 'under nat, only these destinations (repeat; none: every destination)', many)
    .option('--default', 'drop the administrator’s choice: the board, lab file or host decides again')
    .addHelpText(
      'after',
      `
Examples:
  bianbu admin boards network rv-1
  bianbu admin boards network rv-1 --egress nat --allow 198.51.100.0/24

JSON: {"deviceId", "policy": {"egress", "allow"}, "source", "hostDefault", "state", "reason"}
Exit: 6 with network.unsupported for boards that are not QEMU boards.`,
    )
    .action(
      async (deviceId: string, o: { egress?: string; allow?: string[]; default?: boolean }, cmd: Command) => {
        const ctx = ctxOf(cmd);
        if (o.default && o.egress) throw usage('--default and --egress do not go together');
        if (o.allow && !o.egress) throw usage('--allow goes with --egress nat');
        const r =
          o.egress || o.default
            ? await ctx.call(B.adminBoardNetworkSet, {
                deviceId,
                policy: o.default ? null : { egress: o.egress as 'none' | 'nat', allow: o.allow ?? [] },
              })
            : await ctx.call(B.adminBoardNetworkGet, { deviceId });
        if (ctx.json) return printJson(r);
        process.stdout.write(
          `${r.deviceId}: egress ${r.policy.egress}${r.policy.allow.length ? ` to ${r.policy.allow.join(', ')}` : ''} (from ${r.source}; network ${r.state}${r.reason ? `: ${r.reason}` : ''})\n`,
        );
      },
    );

  const images = admin
    .command('images')
    .description('images for everyone: upload, retire (list: bianbu images)');
  images
    .command('upload <file>')
    .description('add an image to the catalogue for everyone (needs device.add_image); --private: yours only')
    .requiredOption('--tag <tag>', 'its tag, e.g. bianbu-2.1')
    .option('--name <name>', 'its name (default: the tag)')
    .option('--os <version>', 'OS version shown beside it')
    .option('--description <text>')
    .option('--models <models>', 'board models it fits, comma-separated (default: every model)')
    .option('--private', 'only for you, within your quota')
    .addHelpText(
      'after',
      `
A root file system archive (tar, tar.gz) for sandbox boards, or a raw disk image (img, img.gz, img.xz,
img.zst) for riscv64 boards; the service tells them apart by their bytes.

JSON: the image: {"tag", "name", "osVersion", "size", "sha256", "models", "format", "source", "ownerId", ...}
Exit: 5 with flash.tag_taken; 3 without device.add_image; 6 with flash.image_invalid (not an image).`,
    )
    .action(
      async (
        file: string,
        o: {
          tag: string;
          name?: string;
          os?: string;
          description?: string;
          models?: string;
          private?: boolean;
        },
        cmd: Command,
      ) => {
        const ctx = ctxOf(cmd);
        const r = await uploadImage(ctx, file, {
          tag: o.tag,
          name: o.name ?? o.tag,
          osVersion: o.os ?? '',
          description: o.description ?? '',
          models: o.models ?? '',
          visibility: o.private ? 'private' : 'public',
        });
        if (ctx.json) printJson(r);
        else if (ctx.quiet) printLines([r.tag]);
        else process.stdout.write(`uploaded ${r.tag} (${r.format}, ${r.sha256.slice(0, 12)})\n`);
      },
    );
  images
    .command('retire <tag>')
    .description(
      'take an image out of the catalogue (public ones need device.add_image); jobs using it finish',
    )
    .addHelpText('after', '\nJSON: the image, with "retiredAt" set\nExit: 4 with flash.image_unknown.')
    .action(async (tag: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const r = await ctx.call(F.retireFlashImage, { tag });
      if (ctx.json) printJson(r);
      else if (!ctx.quiet) process.stdout.write(`retired ${r.tag}\n`);
    });
}

/** The image as one multipart request: its fields (with the file's sha256), then the file, streamed. */
async function uploadImage(ctx: Ctx, file: string, fields: Record<string, string>) {
  let size: number;
  try {
    size = fs.statSync(file).size;
  } catch {
    throw usage(`${file}: no such file`);
  }
  const hash = crypto.createHash('sha256');
  for await (const chunk of fs.createReadStream(file) as AsyncIterable<Buffer>) hash.update(chunk);
  const all = { ...fields, sha256: hash.digest('hex') };
  const boundary = `----bianbu${crypto.randomBytes(12).toString('hex')}`;
  const head = Buffer.from(
    `${Object.entries(all)
      .map(([k, v]) => `--${boundary}\r\ncontent-disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
      .join(
        '',
      )}--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${encodeURIComponent(path.basename(file))}"\r\ncontent-type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* body() {
    yield head;
    yield* fs.createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>;
    yield tail;
  }
  const url = new URL(F.uploadFlashImage.path, ctx.cfg.url);
  let res: http.IncomingMessage;
  try {
    res = await new Promise((resolve, reject) => {
      const req = (url.protocol === 'https:' ? https : http).request(
        url,
        {
          method: 'POST',
          headers: {
            ...authHeaders(ctx.cfg),
            'content-type': `multipart/form-data; boundary=${boundary}`,
            'content-length': String(head.length + size + tail.length),
          },
        },
        resolve,
      );
      req.on('error', reject);
      pipeline(Readable.from(body()), req).catch(reject);
    });
  } catch (e) {
    throw fromNetworkError(e, 'uploadFlashImage');
  }
  const chunks: Buffer[] = [];
  for await (const c of res as AsyncIterable<Buffer>) chunks.push(c);
  const env = await readEnvelope(
    new Response(Buffer.concat(chunks).toString('utf8'), { status: res.statusCode }),
    'uploadFlashImage',
  );
  if (env.code !== 20000) throw envelopeError(env, 'uploadFlashImage');
  return env.data as { tag: string; format: string; sha256: string };
}
