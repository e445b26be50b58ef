// Text encodings of files opened in the editor: UTF-8 with or without BOM, and GBK (common on boards
// set up for Chinese locales). Detection prefers UTF-8 because valid UTF-8 is almost never accidental,
// and only calls a file GBK when its bytes survive a GBK round trip unchanged.
import iconv from 'iconv-lite';
import { BINARY_SNIFF_BYTES, FileErrorKey, type TextEncoding } from '#shared/files.ts';
import { badRequest } from '#server/errors.ts';

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export type Decoded = { kind: 'text'; encoding: TextEncoding; content: string } | { kind: 'binary' };

/** NUL bytes, or many control characters other than whitespace and escape, mean "not text". */
export function looksBinary(buf: Buffer): boolean {
  const sniff = buf.subarray(0, BINARY_SNIFF_BYTES);
  if (sniff.includes(0)) return true;
  let controls = 0;
  for (const b of sniff) {
    if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d && b !== 0x0c && b !== 0x08 && b !== 0x1b)
      controls++;
  }
  return sniff.length > 0 && controls / sniff.length > 0.1;
}

function tryUtf8(buf: Buffer): string | null {
  try {
    return strictUtf8.decode(buf);
  } catch {
    return null;
  }
}

function tryGbk(buf: Buffer): string | null {
  const text = iconv.decode(buf, 'gbk');
  if (text.includes('\uFFFD')) return null;
  return iconv.encode(text, 'gbk').equals(buf) ? text : null;
}

export function decodeText(buf: Buffer, wanted: TextEncoding | 'auto' = 'auto'): Decoded {
  if (looksBinary(buf)) return { kind: 'binary' };
  const hasBom = buf.subarray(0, 3).equals(BOM);
  if (wanted === 'gbk') return { kind: 'text', encoding: 'gbk', content: iconv.decode(buf, 'gbk') };
  if (wanted === 'utf-8' || wanted === 'utf-8-bom') {
    // A forced UTF-8 shows undecodable bytes as U+FFFD rather than refusing to open.
    const body = hasBom ? buf.subarray(3) : buf;
    return { kind: 'text', encoding: wanted, content: new TextDecoder('utf-8').decode(body) };
  }
  if (hasBom) {
    const text = tryUtf8(buf.subarray(3));
    if (text !== null) return { kind: 'text', encoding: 'utf-8-bom', content: text };
  }
  const utf8 = tryUtf8(buf);
  if (utf8 !== null) return { kind: 'text', encoding: 'utf-8', content: utf8 };
  const gbk = tryGbk(buf);
  if (gbk !== null) return { kind: 'text', encoding: 'gbk', content: gbk };
  return { kind: 'binary' };
}

export function encodeText(content: string, encoding: TextEncoding): Buffer {
  if (encoding === 'utf-8') return Buffer.from(content, 'utf8');
  if (encoding === 'utf-8-bom') return Buffer.concat([BOM, Buffer.from(content, 'utf8')]);
  const bytes = iconv.encode(content, 'gbk');
  if (iconv.decode(bytes, 'gbk') !== content) {
    throw badRequest(
      'The text holds characters GBK cannot represent; save it as UTF-8',
      FileErrorKey.unencodable,
    );
  }
  return bytes;
}
