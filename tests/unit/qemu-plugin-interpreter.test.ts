import { describe, expect, it } from 'vitest';
import { interpreterOf } from '#server/boards/qemu/plugin.ts';

describe("a riscv64 plugin's interpreter line (the guest's /run is noexec)", () => {
  it.each([
    ['#!/bin/sh\necho hi\n', ['/bin/sh']],
    ['#! /bin/bash -e\n', ['/bin/bash', '-e']],
    ['#!/usr/bin/env python3\nprint(1)\n', ['/usr/bin/env', 'python3']],
    ['#!/usr/bin/env -S python3 -u\n', ['/usr/bin/env', '-S python3 -u']],
    ['#!\n', []],
    ['echo no line\n', []],
    ['\x7fELF\x02\x01', []],
  ])('reads %j as %j', (text, want) => {
    expect(interpreterOf(Buffer.from(text, 'latin1'))).toEqual(want);
  });
});
