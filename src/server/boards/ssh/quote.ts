// Quoting for the remote shell. SSH exec hands the remote side one command string that its login
// shell parses, so every value from the lab file or a user travels single-quoted, never spliced raw.

/** One argument as a POSIX shell word: single quotes, an embedded quote closed, escaped and reopened. */
export function shQuote(arg: string): string {
  if (arg.includes('\0')) throw new Error('An argument cannot hold a NUL byte');
  if (arg !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** An argv array as one command line for a POSIX shell. */
export function shCommand(argv: readonly string[]): string {
  if (!argv.length) throw new Error('Empty command');
  return argv.map(shQuote).join(' ');
}
