// The files behaviour every board driver must show, run by files.test.ts (local board) and
// files-ssh.test.ts (SSH board). Each scenario talks to the real service over inject or a real socket,
// and checks the board's files from the host side, where the board's root is a directory.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe } from 'vitest';
import { type FileLab, holdBoard } from './files.fixtures.ts';
import { editScenarios } from './files-edit.scenarios.ts';
import { transferScenarios } from './files-transfer.scenarios.ts';
import type { FilesContext } from './helpers/files-context.ts';

export function fileScenarios(kind: string, start: () => Promise<FileLab>) {
  describe(`files on a ${kind} board`, () => {
    const c = {} as FilesContext;
    beforeAll(async () => {
      c.lab = await start();
      c.h = await holdBoard(c.lab.t.app, c.lab.boardName);
      c.home = path.join(c.lab.hostRoot, 'home/user');
      fs.mkdirSync(c.home, { recursive: true });
    }, 120_000);
    afterAll(() => c.lab?.close());

    editScenarios(c);
    transferScenarios(c);
  });
}
