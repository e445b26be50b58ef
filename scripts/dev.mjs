#!/usr/bin/env node
// `npm run dev`: the service in watch mode on :8080 and Vite's dev server (which proxies /api, /idp,
// /ws and /vnc to it). Ctrl+C stops both. The service runs with the flags `npm start` gives it
// (SERVICE_NODE_FLAGS in src/server/system/gc-policy.ts).
import { spawn } from 'node:child_process';

const children = [
  spawn('node', ['--no-memory-reducer', '--watch', '--import', 'tsx', 'src/server/main.ts'], {
    stdio: 'inherit',
    env: {
      ...process.env,
      PORT: process.env.PORT ?? '8080',
      BIANBU_PUBLIC_URL: process.env.BIANBU_PUBLIC_URL ?? 'http://localhost:5173',
    },
  }),
  spawn('npx', ['vite', '--host', '127.0.0.1', '--port', '5173'], { stdio: 'inherit' }),
];
const stop = () => {
  for (const c of children) c.kill('SIGTERM');
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
for (const c of children) c.on('exit', (code) => code && stop());
