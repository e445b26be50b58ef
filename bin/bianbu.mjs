#!/usr/bin/env node
// `bianbu`: the command-line client. Runs the TypeScript sources through tsx's loader.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
