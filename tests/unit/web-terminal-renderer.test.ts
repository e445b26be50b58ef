import { describe, expect, it } from 'vitest';
import { isSoftwareRenderer } from '#web/terminal/renderer.ts';

describe('isSoftwareRenderer', () => {
  it.each([
    // headless Chromium without a GPU (the flood benchmark's browser)
    ['ANGLE (Google, Vulkan 1.3.0 (SwiftShader Device (Subzero) (0x0000C0DE)), SwiftShader driver)', true],
    ['Google SwiftShader', true],
    ['llvmpipe (LLVM 15.0.6, 256 bits)', true],
    ['ANGLE (Microsoft, Microsoft Basic Render Driver Direct3D11 vs_5_0 ps_5_0, D3D11)', true],
    ['ANGLE (Intel, Mesa Intel(R) UHD Graphics 620 (KBL GT2), OpenGL 4.6)', false],
    ['ANGLE (NVIDIA, NVIDIA GeForce RTX 3060 Direct3D11 vs_5_0 ps_5_0, D3D11)', false],
    ['Apple M1', false],
    ['Mali-G57', false],
  ])('classifies %s as software: %s', (name, software) => {
    expect(isSoftwareRenderer(name)).toBe(software);
  });
});
