// The host's side of the boards' networks: the nftables rules (net-policy.ts) sent with `nft -f -`.
// Lifecycle: a board's rules are made when it starts (its uid is known then) and replaced in one
// transaction when its policy changes; removed when it stops. A service start removes the chains of
// boards no instance holds any more (`sweep`: the rules a killed service left). Nothing here fails
// open: a caller that cannot apply the rules gives the board no NIC backend.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import type { NetworkPolicy } from '#shared/board-network.ts';
import { applyText, chainUid, NFT_MAP, NFT_TABLE, removeText, tableText } from './net-policy.ts';

export const NFT_BINARY = '/usr/sbin/nft';

export class FirewallError extends Error {}

interface NftJson {
  nftables?: Array<{
    chain?: { name: string };
    map?: { name: string; elem?: unknown[] };
  }>;
}

/** Runs nft with `input` on its standard input; resolves with stdout, rejects with nft's words. */
function nft(args: string[], input = '', timeoutMs = 15_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let p: ReturnType<typeof spawn>;
    try {
      p = spawn(NFT_BINARY, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin' } });
    } catch (err) {
      reject(new FirewallError((err as Error).message));
      return;
    }
    let out = '';
    let errText = '';
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.stdout?.setEncoding('utf8').on('data', (d: string) => {
      if (out.length < 4 * 1024 * 1024) out += d;
    });
    p.stderr?.setEncoding('utf8').on('data', (d: string) => {
      if (errText.length < 8192) errText += d;
    });
    p.on('error', (err) => {
      clearTimeout(timer);
      reject(new FirewallError(err.message));
    });
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else
        reject(
          new FirewallError(
            errText.trim().split('\n').slice(-3).join(' ') || `nft ended with ${signal ?? `code ${code}`}`,
          ),
        );
    });
    p.stdin?.on('error', () => {});
    p.stdin?.end(input);
  });
}

/** The uids the map sends to a chain, and the board chains that exist. */
async function listTable(): Promise<{ entries: Set<number>; chains: Set<number> }> {
  const entries = new Set<number>();
  const chains = new Set<number>();
  let text: string;
  try {
    text = await nft(['-j', 'list', 'table', 'inet', NFT_TABLE]);
  } catch {
    return { entries, chains };
  }
  const doc = JSON.parse(text) as NftJson;
  for (const item of doc.nftables ?? []) {
    if (item.chain) {
      const uid = chainUid(item.chain.name);
      if (uid !== null) chains.add(uid);
    }
    if (item.map?.name === NFT_MAP) {
      for (const e of item.map.elem ?? []) {
        // [key, verdict] pairs: `[1000000000, {"jump": {"target": "b_1000000000"}}]`.
        const key = Array.isArray(e) ? e[0] : null;
        if (typeof key === 'number') entries.add(key);
      }
    }
  }
  return { entries, chains };
}

export interface Firewall {
  /** Null when the rules can be applied here; else why not (shown to the administrator). */
  unavailable(): Promise<string | null>;
  apply(uid: number, policy: NetworkPolicy): Promise<void>;
  remove(uid: number): Promise<void>;
  /** Removes the chains of uids `stale` says no board holds; answers those uids. */
  sweep(stale: (uid: number) => boolean): Promise<number[]>;
}

/** The host's nftables, through the nft command (package nftables). Needs root (CAP_NET_ADMIN). */
export class NftFirewall implements Firewall {
  private checked: Promise<string | null> | null = null;

  unavailable(): Promise<string | null> {
    this.checked ??= (async () => {
      if (!fs.existsSync(NFT_BINARY)) return 'nft is not installed (apt-get install nftables)';
      if (process.getuid?.() !== 0)
        return 'the service does not run as root: it cannot change the host firewall';
      try {
        await nft(['-f', '-'], `${tableText()}\n`);
        return null;
      } catch (err) {
        return `nft refused the boards' table: ${(err as Error).message}`;
      }
    })();
    // A failure is checked again next time (nftables may have been installed meanwhile).
    void this.checked.then((r) => {
      if (r) this.checked = null;
    });
    return this.checked;
  }

  async apply(uid: number, policy: NetworkPolicy): Promise<void> {
    const { entries } = await listTable();
    await nft(['-f', '-'], applyText(uid, policy, entries.has(uid)));
  }

  async remove(uid: number): Promise<void> {
    const { entries, chains } = await listTable();
    const text = removeText(uid, { entry: entries.has(uid), chain: chains.has(uid) });
    if (text.trim()) await nft(['-f', '-'], text);
  }

  async sweep(stale: (uid: number) => boolean): Promise<number[]> {
    const { entries, chains } = await listTable();
    const gone = [...new Set([...entries, ...chains])].filter(stale);
    const text = gone
      .map((uid) => removeText(uid, { entry: entries.has(uid), chain: chains.has(uid) }))
      .join('');
    if (text.trim()) await nft(['-f', '-'], text);
    return gone;
  }
}

/** The host's firewall as every board of this process uses it (it checks once whether rules apply). */
export const hostFirewall = new NftFirewall();
