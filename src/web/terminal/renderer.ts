// Which xterm renderer a terminal gets. WebGL wins only on a real GPU: where the browser has none it
// offers WebGL through a software rasteriser (SwiftShader in Chromium, llvmpipe in Mesa), and there
// xterm's WebGL renderer is the slower one — tests/bench/flood.bench.ts in headless Chromium
// (SwiftShader) moved a 256 MiB flood at 2.1–3.0 MiB/s with it against 8.5–8.9 MiB/s with the DOM
// renderer, and another shell's echo during the flood went from p99 458–717 ms to 53 ms. So a
// software WebGL counts as no WebGL.

const SOFTWARE = /swiftshader|llvmpipe|softpipe|software|basic render driver|lavapipe/i;

/** A WebGL renderer string (UNMASKED_RENDERER_WEBGL) that names a software rasteriser. */
export function isSoftwareRenderer(name: string): boolean {
  return SOFTWARE.test(name);
}

let cached: boolean | null = null;

/** Whether this browser draws WebGL on a GPU: probed once with a throwaway context. */
export function hasHardwareWebgl(): boolean {
  if (cached !== null) return cached;
  cached = false;
  try {
    const canvas = document.createElement('canvas');
    const gl = canvas.getContext('webgl2') as WebGL2RenderingContext | null;
    if (!gl) return cached;
    const info = gl.getExtension('WEBGL_debug_renderer_info');
    const name = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER) ?? '');
    cached = !isSoftwareRenderer(name);
    gl.getExtension('WEBGL_lose_context')?.loseContext();
  } catch {
    cached = false;
  }
  return cached;
}
