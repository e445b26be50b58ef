// Avatar images: checked by content (a PNG or JPEG whose header parses and whose stream ends where
// the format says it ends), size and dimensions; stored under <data>/avatars with an unguessable
// name, written to a temporary file and renamed so a reader never sees half an image.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { imageSize } from 'image-size';
import { AppError, badRequest } from '#server/errors.ts';
import { ResultCode } from '#shared/codes.ts';
import { AVATAR_FRAME_PX, AVATAR_MAX_KB } from '#shared/constants.ts';
import { IdentityErrorKey } from '#shared/user.ts';

export const AVATAR_MAX_BYTES = AVATAR_MAX_KB * 1024;
export const AVATAR_NAME = /^[0-9a-f-]{36}-[A-Za-z0-9_-]{22}\.(png|jpg)$/;
export const AVATAR_URL_PREFIX = '/api/user/avatar/';

export const avatarTooLarge = () =>
  new AppError(
    413,
    ResultCode.PayloadTooLarge,
    IdentityErrorKey.avatarTooLarge,
    `The image is larger than ${AVATAR_MAX_KB} KB`,
  );

const PNG_END = Buffer.from([0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82]);

/** Whether the bytes end the way the format requires (IEND chunk, JPEG end-of-image marker). */
function wellTerminated(buf: Buffer, type: 'png' | 'jpg'): boolean {
  if (type === 'png') return buf.subarray(-PNG_END.length).equals(PNG_END);
  // Some encoders pad after the end-of-image marker; accept a few trailing zero bytes.
  let end = buf.length;
  while (end > 2 && buf[end - 1] === 0 && buf.length - end < 16) end--;
  return buf[end - 2] === 0xff && buf[end - 1] === 0xd9;
}

export function checkAvatar(buf: Buffer): {
  ext: 'png' | 'jpg';
  mime: string;
  width: number;
  height: number;
} {
  if (buf.length > AVATAR_MAX_BYTES) throw avatarTooLarge();
  let info: ReturnType<typeof imageSize>;
  try {
    info = imageSize(buf);
  } catch {
    throw badRequest('The file is not a PNG or JPEG image', IdentityErrorKey.avatarNotImage);
  }
  const type = info.type === 'png' ? 'png' : info.type === 'jpg' ? 'jpg' : null;
  if (!type || !wellTerminated(buf, type))
    throw badRequest('The file is not a PNG or JPEG image', IdentityErrorKey.avatarNotImage);
  if (info.width < AVATAR_FRAME_PX || info.height < AVATAR_FRAME_PX)
    throw badRequest(
      `The image must be at least ${AVATAR_FRAME_PX}×${AVATAR_FRAME_PX} pixels`,
      IdentityErrorKey.avatarTooSmall,
    );
  return {
    ext: type,
    mime: type === 'png' ? 'image/png' : 'image/jpeg',
    width: info.width,
    height: info.height,
  };
}

export function avatarDir(dataDir: string): string {
  return path.join(dataDir, 'avatars');
}

/** Writes the image atomically and answers its file name. */
export async function storeAvatar(
  dataDir: string,
  userId: string,
  buf: Buffer,
  ext: 'png' | 'jpg',
): Promise<string> {
  const dir = avatarDir(dataDir);
  await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
  const name = `${userId}-${crypto.randomBytes(16).toString('base64url')}.${ext}`;
  const tmp = path.join(dir, `.${name}.${process.pid}.tmp`);
  try {
    // Served by the service itself: nobody else on the host needs to read it (see system/data-dir.ts).
    await fs.promises.writeFile(tmp, buf, { mode: 0o600, flag: 'wx' });
    await fs.promises.rename(tmp, path.join(dir, name));
  } catch (err) {
    await fs.promises.rm(tmp, { force: true });
    throw err;
  }
  return name;
}

/** Removes a replaced avatar file; a URL that is not one of ours is ignored. */
export async function removeAvatar(dataDir: string, url: string | null): Promise<void> {
  if (!url?.startsWith(AVATAR_URL_PREFIX)) return;
  const name = url.slice(AVATAR_URL_PREFIX.length);
  if (!AVATAR_NAME.test(name)) return;
  await fs.promises.rm(path.join(avatarDir(dataDir), name), { force: true });
}
