import path from 'node:path';
import tailwindcss from '@tailwindcss/vite';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

const api = process.env.BIANBU_DEV_API ?? 'http://127.0.0.1:8080';
const shared = path.resolve('src/shared');

/**
 * src/shared's `zod` is src/web/lazy-zod.ts in the browser: schemas are recipes until first used, so
 * zod's runtime is not part of the first load. The service and the cli import the real zod.
 */
function lazyZod(): Plugin {
  return {
    name: 'bianbu-lazy-zod',
    enforce: 'pre',
    resolveId(source, importer) {
      if (source !== 'zod' || !importer) return null;
      const from = path.resolve(importer.replace(/[?#].*$/, ''));
      return from.startsWith(shared + path.sep) ? path.resolve('src/web/lazy-zod.ts') : null;
    },
  };
}

/**
 * axios's fetch adapter left out of the console: its client (src/web/api/transport.ts) uses the XHR
 * adapter only (upload progress), so the fetch adapter's 4 KB are never run. adapters.js asks this
 * stub for fetch and finds none.
 */
function axiosXhrOnly(): Plugin {
  const stub = '\0axios-no-fetch';
  return {
    name: 'bianbu-axios-xhr-only',
    enforce: 'pre',
    resolveId(source, importer) {
      if (source === './fetch.js' && importer?.replace(/\\/g, '/').endsWith('/axios/lib/adapters/adapters.js'))
        return stub;
      return null;
    },
    load(id) {
      return id === stub ? 'export const getFetch = () => null; export default false;' : null;
    },
  };
}

// The console is built into dist/web; the service serves it. In `npm run dev`, Vite serves it and
// proxies the service's paths so cookies and the realtime socket stay same-origin.
export default defineConfig({
  plugins: [lazyZod(), axiosXhrOnly(), react(), tailwindcss()],
  resolve: {
    alias: { '#shared': '/src/shared', '#web': '/src/web' },
  },
  build: { outDir: 'dist/web', emptyOutDir: true, chunkSizeWarningLimit: 2000 },
  server: {
    proxy: {
      '/api': api,
      '/idp': api,
      '/ws': { target: api.replace(/^http/, 'ws'), ws: true },
      '/vnc': { target: api.replace(/^http/, 'ws'), ws: true },
    },
  },
});
