// Typed file calls of the console. Transfers use the spec's 600000 ms timeout and progress callbacks
// (the shared `call` applies them to calls marked `transfer`); every call is silent so the panes word
// failures themselves through the `files` namespace.
import { fileCalls, type TextEncoding } from '#shared/files.ts';
import type { RequestOf, ResponseOf } from '#shared/http.ts';
import { call, type Progress as HttpProgress } from '#web/api/http.ts';

type FileCall = (typeof fileCalls)[number];
type Named<N extends FileCall['name']> = Extract<FileCall, { name: N }>;

function def<N extends FileCall['name']>(name: N): Named<N> {
  const found = fileCalls.find((c) => c.name === name);
  if (!found) throw new Error(`call ${name} is not in the contract`);
  return found as Named<N>;
}

export const FileCalls = {
  browse: def('fileBrowser'),
  read: def('fileRead'),
  write: def('fileWrite'),
  remove: def('removeFile'),
  mkdir: def('fileMkdir'),
  rename: def('fileRename'),
  download: def('downloadFile'),
  upload: def('uploadFile'),
} as const;

const silent = { silent: true };

export const listDir = (applyId: string, path: string) => call(FileCalls.browse, { applyId, path }, silent);

export const readFile = (applyId: string, path: string, encoding: TextEncoding | 'auto' = 'auto') =>
  call(FileCalls.read, { applyId, path, encoding }, silent);

export const writeFile = (payload: RequestOf<typeof FileCalls.write>) =>
  call(FileCalls.write, payload, silent);

export const removePath = (
  applyId: string,
  path: string,
  opts: { recursive?: boolean; confirm?: string } = {},
) => call(FileCalls.remove, { applyId, path, ...opts }, silent);

export const makeDir = (applyId: string, path: string) => call(FileCalls.mkdir, { applyId, path }, silent);

export const renamePath = (applyId: string, path: string, to: string) =>
  call(FileCalls.rename, { applyId, path, to }, silent);

export interface Progress {
  loaded: number;
  total?: number;
}

const progressOf = (e: HttpProgress): Progress => ({ loaded: e.loaded, total: e.total });

export async function downloadBlob(
  deviceId: string,
  filePath: string,
  onProgress: (p: Progress) => void,
  signal: AbortSignal,
): Promise<Blob> {
  return (await call(
    FileCalls.download,
    { deviceId, filePath },
    {
      silent: true,
      signal,
      onDownloadProgress: (e) => onProgress(progressOf(e)),
    },
  )) as Blob;
}

export function uploadFiles(
  applyId: string,
  folder: string,
  files: readonly File[],
  onProgress: (p: Progress) => void,
  signal: AbortSignal,
): Promise<ResponseOf<typeof FileCalls.upload>> {
  // Fields first: the service reads them before it streams the first file.
  const form = new FormData();
  form.append('applyId', applyId);
  form.append('path', folder);
  for (const f of files) form.append('file', f, f.name);
  return call(FileCalls.upload, form, {
    silent: true,
    signal,
    onUploadProgress: (e) => onProgress(progressOf(e)),
  });
}

/** Hands a downloaded Blob to the browser as a file. */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.rel = 'noopener';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 30_000);
}
