// A start killed while it built a built-in image leaves the build's tree (in the temporary directory)
// and a half-written image (beside the images); the next start sweeps them, and only them.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sweepLeftovers } from '#server/flash/image-catalogue.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-test-builtin-'));
const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-test-outside-'));
fs.writeFileSync(path.join(outside, 'keep'), 'x');
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(outside, { recursive: true, force: true });
});

const HOUR = 60 * 60_000;
const age = (p: string) => {
  const t = (Date.now() - HOUR) / 1000;
  fs.utimesSync(p, t, t);
};
const isBuild = (n: string) => n.startsWith('bianbu-image-');
const isHalf = (n: string) => /\.tmp-[0-9a-f]{8}$/.test(n);

describe("sweeping a killed start's image builds", () => {
  it('removes old build trees and half-written images; keeps images and builds under way', async () => {
    const tree = path.join(dir, 'bianbu-image-AbC123');
    fs.mkdirSync(path.join(tree, 'root', 'etc'), { recursive: true });
    fs.writeFileSync(path.join(tree, 'root', 'etc', 'hostname'), 'bianbu\n');
    age(tree);
    const half = path.join(dir, 'bianbu-developer.tar.gz.tmp-0a1b2c3d');
    fs.writeFileSync(half, 'partial');
    age(half);
    const image = path.join(dir, 'bianbu-developer.tar.gz');
    fs.writeFileSync(image, 'whole');
    age(image);
    const young = path.join(dir, 'bianbu-image-young1');
    fs.mkdirSync(young);
    expect(await sweepLeftovers(dir, isBuild)).toEqual(['bianbu-image-AbC123']);
    expect(await sweepLeftovers(dir, isHalf)).toEqual(['bianbu-developer.tar.gz.tmp-0a1b2c3d']);
    expect(fs.existsSync(tree)).toBe(false);
    expect(fs.existsSync(half)).toBe(false);
    expect(fs.readFileSync(image, 'utf8')).toBe('whole');
    expect(fs.existsSync(young)).toBe(true);
  });

  it('removes an old link named like a build as a link, never what it names', async () => {
    const link = path.join(dir, 'bianbu-image-oldlnk');
    fs.symlinkSync(outside, link);
    const swept = await sweepLeftovers(dir, isBuild, Date.now() + HOUR);
    expect(swept).toContain('bianbu-image-oldlnk');
    expect(fs.existsSync(link)).toBe(false);
    expect(fs.readFileSync(path.join(outside, 'keep'), 'utf8')).toBe('x');
  });
});
