// Files on the board of the caller's apply: browse, read, write, remove, create, rename, and the two
// transfer calls (streamed upload and download). Paths are board paths, absolute from the board's
// root ("/home/user/a.txt"); a relative `path` resolves against `dir`. Containment inside the board
// is the driver's job; these schemas refuse what no board path may hold (NUL, newlines, overlong names).
import { z } from 'zod';
import { defineCall } from './http.ts';
import { entityId } from './ids.ts';

/** Files larger than this open as "too large" (offer download instead); the editor saves at most this. */
export const EDITOR_MAX_BYTES = 2 * 1024 * 1024;
/** JSON text of a save can be larger than the file it encodes (escapes); the body limit allows for it. */
export const FILE_WRITE_BODY_LIMIT = 8 * EDITOR_MAX_BYTES;
/** Bytes examined to decide whether a file is text. */
export const BINARY_SNIFF_BYTES = 8192;
export const MAX_NAME_BYTES = 255;
export const MAX_PATH_CHARS = 4096;

export const FileErrorKey = {
  outsideRoot: 'path.outside_root',
  invalid: 'path.invalid',
  nameTooLong: 'path.name_too_long',
  notFound: 'path.not_found',
  exists: 'path.exists',
  notDir: 'path.not_a_directory',
  isDir: 'path.is_a_directory',
  permission: 'path.permission_denied',
  changed: 'file.changed',
  tooLarge: 'file.too_large',
  noSpace: 'file.no_space',
  /** The text holds characters the chosen encoding (GBK) cannot represent. */
  unencodable: 'file.unencodable',
  protectedPath: 'file.remove_protected',
  notEmpty: 'path.not_empty',
  timeout: 'transfer.timeout',
  aborted: 'transfer.aborted',
  uploadField: 'upload.field_missing',
} as const;
export type FileErrorKey = (typeof FileErrorKey)[keyof typeof FileErrorKey];

const utf8Length = (s: string) => new TextEncoder().encode(s).length;

/** A board path or a name relative to `dir`: what any board path must satisfy before a driver sees it. */
export const boardPath = z
  .string()
  .max(MAX_PATH_CHARS, `at most ${MAX_PATH_CHARS} characters`)
  .refine((p) => !p.includes('\0'), 'must not contain NUL bytes')
  .refine((p) => !/[\r\n]/.test(p), 'must not contain line breaks')
  .refine((p) => p.split('/').every((seg) => utf8Length(seg) <= MAX_NAME_BYTES), {
    message: `each name at most ${MAX_NAME_BYTES} bytes`,
  });

/** One name (no slash): upload file names and the new name of a rename. */
export const fileName = z
  .string()
  .min(1, 'must not be empty')
  .refine((n) => utf8Length(n) <= MAX_NAME_BYTES, `at most ${MAX_NAME_BYTES} bytes`)
  .refine((n) => !n.includes('\0') && !/[\r\n]/.test(n), 'must not contain NUL bytes or line breaks')
  .refine((n) => !n.includes('/') && n !== '.' && n !== '..', 'must be a plain name, not a path');

const applyId = entityId;

/**
 * Resolves `p` against `base` into a normal absolute board path ("/a/b"), or null when `..` would
 * climb above the board's root. Pure: the server, the console and the cli share it.
 */
export function normalizeBoardPath(p: string, base = '/'): string | null {
  const start = p.startsWith('/') ? [] : base.split('/');
  const out: string[] = [];
  for (const seg of [...start, ...p.split('/')]) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (!out.length) return null;
      out.pop();
    } else out.push(seg);
  }
  return `/${out.join('/')}`;
}

export function parentOf(p: string): string {
  const i = p.lastIndexOf('/');
  return i <= 0 ? '/' : p.slice(0, i);
}

export function baseName(p: string): string {
  return p.slice(p.lastIndexOf('/') + 1) || '/';
}

/** Paths whose removal asks twice (the console) and needs `confirm` equal to the path (the service). */
export function isProtectedPath(p: string, home?: string | null): boolean {
  return p === '/' || p === '/home' || p === '/root' || /^\/home\/[^/]+$/.test(p) || (!!home && p === home);
}

export const fileType = z.enum(['file', 'dir', 'symlink', 'other']);
export type FileType = z.infer<typeof fileType>;

export const fileEntry = z.object({
  name: z.string(),
  path: z.string(),
  type: fileType,
  size: z.number(),
  mtimeMs: z.number(),
  mode: z.number(),
});
export type FileEntryDto = z.infer<typeof fileEntry>;

export const TextEncoding = { utf8: 'utf-8', utf8Bom: 'utf-8-bom', gbk: 'gbk' } as const;
export type TextEncoding = (typeof TextEncoding)[keyof typeof TextEncoding];
export const textEncoding = z.enum(['utf-8', 'utf-8-bom', 'gbk']);

const located = { applyId, path: boardPath, dir: boardPath.optional() };

export const fileBrowserRequest = z.object(located);
export const fileBrowserResponse = z.object({
  /** The listed folder, normalised. */
  path: z.string(),
  entries: z.array(fileEntry),
});
export type FileBrowserResponse = z.infer<typeof fileBrowserResponse>;

export const fileReadRequest = z.object({
  ...located,
  /** `auto` detects UTF-8 (with or without BOM) and GBK; the others force a decoding. */
  encoding: z.enum(['auto', 'utf-8', 'utf-8-bom', 'gbk']).default('auto'),
});
const fileMeta = { path: z.string(), size: z.number(), mtimeMs: z.number(), mode: z.number() };
export const fileReadResponse = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('text'),
    ...fileMeta,
    /** sha256 (hex) of the bytes on the board: sent back on save to detect a change since opening. */
    hash: z.string(),
    encoding: textEncoding,
    content: z.string(),
  }),
  z.object({ kind: z.literal('binary'), ...fileMeta, hash: z.string() }),
  z.object({ kind: z.literal('tooLarge'), ...fileMeta, limit: z.number() }),
]);
export type FileReadResponse = z.infer<typeof fileReadResponse>;

export const fileWriteRequest = z.object({
  ...located,
  data: z.string().max(EDITOR_MAX_BYTES, `at most ${EDITOR_MAX_BYTES} characters`),
  encoding: textEncoding.default('utf-8'),
  /**
   * The hash answered by file-read when the file was opened: the save is refused with `file.changed`
   * when the board's file differs. `null` creates a new file and is refused when one exists. Absent:
   * overwrite whatever is there (the spec's plain payload).
   */
  expectedHash: z.string().max(128).nullable().optional(),
});
export const fileWriteResponse = z.object({ ...fileMeta, hash: z.string() });
export type FileWriteResponse = z.infer<typeof fileWriteResponse>;

export const removeFileRequest = z.object({
  ...located,
  /** Remove a folder with everything in it; without it only files and empty folders are removed. */
  recursive: z.boolean().optional(),
  /** Required for `/` and home folders: the normalised path again, the second "yes". */
  confirm: boardPath.optional(),
});

export const fileMkdirRequest = z.object(located);
export const fileRenameRequest = z.object({ ...located, to: boardPath.pipe(z.string().min(1)) });
export const pathResponse = z.object({ path: z.string() });

export const downloadFileRequest = z.object({ deviceId: entityId, filePath: boardPath });

/** Fields of the multipart upload; files follow them under any field name. */
export const uploadFields = z.object({
  applyId: applyId.optional(),
  /** The folder the files land in. */
  path: boardPath.pipe(z.string().min(1, 'the target folder is required')),
});
export const uploadFileResponse = z.object({
  files: z.array(z.object({ name: z.string(), path: z.string(), size: z.number() })),
});
export type UploadFileResponse = z.infer<typeof uploadFileResponse>;

export const fileCalls = [
  defineCall({
    name: 'fileBrowser',
    method: 'POST',
    path: '/api/device/file-browser',
    request: fileBrowserRequest,
    response: fileBrowserResponse,
    needsApply: true,
    readOnly: true,
    summary: 'List a folder of the board of the apply (folders first, then by name)',
  }),
  defineCall({
    name: 'fileRead',
    method: 'POST',
    path: '/api/device/file-read',
    request: fileReadRequest,
    response: fileReadResponse,
    needsApply: true,
    summary: 'Read a file for the editor: text with its encoding and hash, or "binary" / "too large"',
  }),
  defineCall({
    name: 'fileWrite',
    method: 'POST',
    path: '/api/device/file-write',
    request: fileWriteRequest,
    response: fileWriteResponse,
    needsApply: true,
    bodyLimit: FILE_WRITE_BODY_LIMIT,
    summary: 'Save a text file atomically, refusing when it changed since it was opened (expectedHash)',
  }),
  defineCall({
    name: 'removeFile',
    method: 'POST',
    path: '/api/device/remove-file',
    request: removeFileRequest,
    response: pathResponse,
    needsApply: true,
    summary: 'Remove a file or folder; / and home folders need confirm',
  }),
  defineCall({
    name: 'fileMkdir',
    method: 'POST',
    path: '/api/device/file-mkdir',
    request: fileMkdirRequest,
    response: pathResponse,
    needsApply: true,
    summary: 'Create a folder',
  }),
  defineCall({
    name: 'fileRename',
    method: 'POST',
    path: '/api/device/file-rename',
    request: fileRenameRequest,
    response: pathResponse,
    needsApply: true,
    summary: 'Rename or move a file or folder; refuses to replace an existing one',
  }),
  defineCall({
    name: 'downloadFile',
    method: 'POST',
    path: '/api/device/downloadFile',
    request: downloadFileRequest,
    response: z.unknown(),
    answer: 'stream',
    transfer: true,
    summary:
      'Download a file, or a folder as a tar archive, streamed; the caller must hold an apply on deviceId',
  }),
  defineCall({
    name: 'uploadFile',
    method: 'POST',
    path: '/api/device/uploadFile',
    payload: 'multipart',
    response: uploadFileResponse,
    needsApply: true,
    transfer: true,
    summary:
      'Upload files (multipart: fields applyId and path, then files), streamed and renamed into place whole',
  }),
] as const;
