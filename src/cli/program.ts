// The command tree of `bianbu`, the command-line client of Bianbu Cloud: sign in (browser or API key),
// drive every device action by name, work on boards (exec, shell, cp), script it all (--json, exit
// codes per error class; see errors.ts). Typed from the same src/shared contract as the service and
// the console. Building it has no side effects (tests inspect it; main.ts runs it).
import { Command } from 'commander';
import { registerAdmin } from './commands/admin.ts';
import { registerAuth } from './commands/auth.ts';
import { registerCompletion } from './commands/completion.ts';
import { registerCp } from './commands/cp.ts';
import { registerDevice } from './commands/device.ts';
import { registerExec } from './commands/exec.ts';
import { registerFlash } from './commands/flash.ts';
import { registerHosts } from './commands/hosts.ts';
import { registerLeases } from './commands/leases.ts';
import { registerQueue } from './commands/queue.ts';
import { registerRaw } from './commands/raw.ts';
import { registerSeq } from './commands/seq.ts';
import { registerShare } from './commands/share.ts';
import { registerShell } from './commands/shell.ts';
import { registerSnapshot } from './commands/snapshot.ts';

export function buildProgram(): Command {
  const program = new Command('bianbu');
  program
    .description('command-line client of Bianbu Cloud: lease, flash and work on remote RISC-V boards')
    .version('0.1.0', '-V, --version')
    .option('--json', 'print one JSON document (each command documents its shape in its --help)')
    .option('-q, --quiet', 'no progress or messages; listings print only names/ids')
    .option('-p, --profile <name>', 'use this saved profile (default: the current one, or BIANBU_PROFILE)')
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .configureHelp({ sortSubcommands: false, showGlobalOptions: true })
    .addHelpText(
      'after',
      `
Examples:
  bianbu login --url https://cloud.example.com
  bianbu login --url https://cloud.example.com --with-key < key.txt
  bianbu request ci-1 --duration 48h
  bianbu exec ci-1 -- uname -a
  bianbu cp ./build/ ci-1:/root/build
  bianbu flash bianbu-developer 'ci-*' --wait
  bianbu shell ci-1
  bianbu seq run nightly 'ci-*' --wait
  bianbu share add-board team ci-1 ; bianbu share boards
  bianbu queue join nightly --model k1 --wait

Environment: BIANBU_URL, BIANBU_API_KEY (override the profile for one run), BIANBU_PROFILE,
BIANBU_CLI_CONFIG (the profiles file; default $XDG_CONFIG_HOME/bianbu/cli.json).

Exit codes: 0 ok, 1 some boards failed, 2 usage, 3 auth, 4 not found, 5 conflict/busy,
6 board failure, 7 network, 8 server error, 130 interrupted; exec: the remote status (255: bianbu failed).
Errors go to stderr as "bianbu: <message> (<stable key>)", or {"error": {...}} with --json.`,
    );
  registerAuth(program);
  registerLeases(program);
  registerQueue(program);
  registerDevice(program);
  registerFlash(program);
  registerExec(program);
  registerShell(program);
  registerCp(program);
  registerSeq(program);
  registerShare(program);
  registerSnapshot(program);
  registerHosts(program);
  registerAdmin(program);
  registerRaw(program);
  registerCompletion(program);
  return program;
}
