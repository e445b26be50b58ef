// What the files scenarios share (files.scenarios.ts, files-edit.scenarios.ts,
// files-transfer.scenarios.ts): the lab and the holder a scenario set runs against, and its calls.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type FileLab, type Holder, post } from '../files.fixtures.ts';

/** Filled by the suite's beforeAll: the lab, the user holding its board, and the user's home on the host. */
export interface FilesContext {
  lab: FileLab;
  h: Holder;
  home: string;
}

/** The calls a scenario makes, against whatever the context holds when it runs. */
export function filesCalls(c: FilesContext) {
  const call = <T = any>(
    url: string,
    payload: Record<string, unknown>,
    headers: Record<string, string> = {},
  ) => {
    c.lab.settle();
    return post<T>(c.lab.t.app, c.h.user, url, { applyId: c.h.applyId, ...payload }, headers);
  };
  const onBoard = (p: string) => path.join(c.lab.hostRoot, p);
  const writeOnBoard = (p: string, data: string | Buffer) => {
    fs.mkdirSync(path.dirname(onBoard(p)), { recursive: true });
    fs.writeFileSync(onBoard(p), data);
    c.lab.settle();
  };
  return { call, onBoard, writeOnBoard };
}

export const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
