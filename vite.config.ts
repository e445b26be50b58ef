import tailwindcss from '@tailwindcss/vite';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const api = process.env.BIANBU_DEV_API ?? 'http://127.0.0.1:8080';

// The console is built into dist/web; the service serves it. In `npm run dev`, Vite serves it and
// proxies the service's paths so cookies and the realtime socket stay same-origin.
export default defineConfig({
  plugins: [react(), tailwindcss()],
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
