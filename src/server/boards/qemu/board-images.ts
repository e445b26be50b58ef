// The riscv64 board images (scripts/board-images/build.sh): Debian riscv64 raw disks, zstd-compressed,
// each with a `.json` of facts the build read from the image itself. Lifecycle: `ensure()` runs the
// build once per service (it does nothing for images whose recipe is current), reporting its progress
// lines; `find(tag)` answers an image and its facts once both files are there.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

export const BOARD_IMAGE_VARIANTS = ['minimal', 'developer'] as const;
export const boardImageTag = (variant: string) => `debian-trixie-riscv64-${variant}`;

const BUILD_SCRIPT = fileURLToPath(new URL('../../../../scripts/board-images/build.sh', import.meta.url));
const HOST_SETUP = fileURLToPath(new URL('../../../../scripts/board-images/host-setup.sh', import.meta.url));

/** Builds in progress, so that a stopping service ends them (their process groups). */
const running = new Set<number>();

/** Runs a script; answers its exit code and its output's last line. */
function run(
  file: string,
  args: string[],
  onLine: (line: string) => void,
): Promise<{ code: number | null; last: string }> {
  return new Promise((resolve) => {
    const child = spawn('/bin/bash', [file, ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    if (child.pid) running.add(child.pid);
    let last = '';
    const take = (text: string) => {
      for (const raw of text.split('\n')) {
        const line = raw.trim();
        if (!line) continue;
        last = line;
        onLine(line);
      }
    };
    child.stdout.setEncoding('utf8').on('data', take);
    child.stderr.setEncoding('utf8').on('data', take);
    child.on('close', (code) => {
      if (child.pid) running.delete(child.pid);
      resolve({ code, last });
    });
  });
}

export const boardImageFacts = z.object({
  name: z.string(),
  variant: z.string(),
  arch: z.string(),
  os: z.string(),
  kernel: z.string(),
  rawBytes: z.number().int().positive(),
  rawSha256: z.string().regex(/^[a-f0-9]{64}$/),
  file: z.string().regex(/^[A-Za-z0-9._-]+$/),
  fileBytes: z.number().int().positive(),
  fileSha256: z.string().regex(/^[a-f0-9]{64}$/),
  recipe: z.string(),
});
export type BoardImageFacts = z.infer<typeof boardImageFacts>;

export interface BoardImageStatus {
  state: 'ready' | 'building' | 'missing' | 'failed';
  /** The build's last progress line, or why it cannot build. */
  line: string;
}

export class BoardImages {
  private building: Promise<void> | null = null;
  status: BoardImageStatus = { state: 'missing', line: '' };

  constructor(
    readonly dir: string,
    private readonly log: (msg: string, extra?: Record<string, unknown>) => void = () => {},
  ) {}

  /**
   * Ends a build in progress (the service stops): its process group gets SIGTERM, so mmdebstrap
   * unmounts what it mounted; a later build removes the half-built work directory.
   */
  stop(): void {
    for (const pid of running) {
      try {
        process.kill(-pid, 'SIGTERM');
      } catch {}
    }
  }

  /** The image `tag` and its facts, or null while it is not built. */
  find(tag: string): { file: string; facts: BoardImageFacts } | null {
    if (!/^[a-z0-9][a-z0-9._-]{0,63}$/.test(tag)) return null;
    try {
      const facts = boardImageFacts.parse(
        JSON.parse(fs.readFileSync(path.join(this.dir, `${tag}.json`), 'utf8')),
      );
      const file = path.join(this.dir, facts.file);
      if (!fs.statSync(file).isFile()) return null;
      return { file, facts };
    } catch {
      return null;
    }
  }

  all(): { file: string; facts: BoardImageFacts }[] {
    return BOARD_IMAGE_VARIANTS.map((v) => this.find(boardImageTag(v))).filter((x) => x !== null);
  }

  /**
   * Builds what is missing or stale (minutes on a first start; a second run finds everything current
   * in a second). Without the build's host tools, images already there are used as they are.
   */
  ensure(): Promise<void> {
    this.building ??= this.build().finally(() => {
      this.building = null;
    });
    return this.building;
  }

  private async build(): Promise<void> {
    const have = this.all().length === BOARD_IMAGE_VARIANTS.length;
    if (process.getuid?.() !== 0) {
      this.status = { state: have ? 'ready' : 'missing', line: 'building riscv64 board images needs root' };
      if (!have) this.log(this.status.line);
      return;
    }
    // The host's tools and binfmt (host-setup.sh says the apt-get line when a package is missing).
    const setup = await run(HOST_SETUP, [], () => {});
    if (setup.code !== 0) {
      this.status = { state: have ? 'ready' : 'missing', line: setup.last };
      if (!have) this.log(`riscv64 board images cannot be built: ${setup.last}`);
      return;
    }
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o755 });
    this.status = { state: 'building', line: 'starting the image build' };
    const begun = Date.now();
    const r = await run(BUILD_SCRIPT, ['--variant', 'all', this.dir], (line) => {
      this.status = { state: 'building', line };
      // The build's progress lines ("[12 s] minimal: rootfs: ...") go to the service's log.
      if (/^\[\d+ s\]/.test(line)) this.log(`riscv64 board images: ${line}`);
    });
    const ok = r.code === 0 && this.all().length === BOARD_IMAGE_VARIANTS.length;
    this.status = ok
      ? { state: 'ready', line: `ready after ${Math.round((Date.now() - begun) / 1000)} s` }
      : { state: this.all().length ? 'ready' : 'failed', line: r.last || `build exited with ${r.code}` };
    if (!ok) this.log('riscv64 board image build failed', { code: r.code, last: r.last });
  }
}
