// Which Chromium the e2e suite drives, and whether the suite runs at all. Without a browser the
// suite is skipped with a loud notice, unless E2E_REQUIRED=1 (CI), where a missing browser fails.
import fs from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const E2E_REQUIRED = process.env.E2E_REQUIRED === '1';
export const HAS_CHROMIUM = fs.existsSync(CHROMIUM_PATH);

/** The one allowed skip: no browser on a machine that does not require e2e. */
export const SKIP_E2E = !HAS_CHROMIUM && !E2E_REQUIRED;

if (!HAS_CHROMIUM) {
  const line = '='.repeat(78);
  const what = E2E_REQUIRED
    ? 'E2E_REQUIRED=1: the e2e suite FAILS.'
    : "The e2e suite is SKIPPED. Install Debian's chromium or set CHROMIUM_PATH.";
  console.warn(`\n${line}\n  NO CHROMIUM at ${CHROMIUM_PATH}\n  ${what}\n${line}\n`);
}

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function launchChromium(): Promise<Browser> {
  if (!HAS_CHROMIUM)
    throw new Error(`no Chromium at ${CHROMIUM_PATH} (set CHROMIUM_PATH) and E2E_REQUIRED=1`);
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
}
