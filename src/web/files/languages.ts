// Syntax highlighting by file type. JavaScript/TypeScript, Python, JSON and Markdown use their Lezer
// grammars; C-family sources and shell/config files (the bulk of what lives on a board) get two small
// stream tokenizers, enough for comments, strings, numbers and keywords.
import { javascript } from '@codemirror/lang-javascript';
import { json } from '@codemirror/lang-json';
import { markdown } from '@codemirror/lang-markdown';
import { python } from '@codemirror/lang-python';
import { StreamLanguage, type StringStream } from '@codemirror/language';
import type { Extension } from '@codemirror/state';

const C_KEYWORDS = new Set(
  (
    'auto break case char const continue default do double else enum extern float for goto if inline int long ' +
    'register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while ' +
    'bool true false class namespace template typename public private protected virtual override new delete this ' +
    'nullptr using try catch throw fn let mut impl trait pub use mod match loop func package import var type ' +
    'interface go defer chan select range map struct final extends implements'
  ).split(' '),
);

interface CState {
  inComment: boolean;
}

const cLike = StreamLanguage.define<CState>({
  name: 'clike',
  startState: () => ({ inComment: false }),
  token(stream: StringStream, state: CState) {
    if (state.inComment) {
      if (stream.skipTo('*/')) {
        stream.pos += 2;
        state.inComment = false;
      } else stream.skipToEnd();
      return 'comment';
    }
    if (stream.eatSpace()) return null;
    if (stream.sol() && stream.match(/^\s*#\s*\w+/)) return 'meta';
    if (stream.match('//')) {
      stream.skipToEnd();
      return 'comment';
    }
    if (stream.match('/*')) {
      state.inComment = true;
      return 'comment';
    }
    const ch = stream.peek();
    if (ch === '"' || ch === "'" || ch === '`') {
      stream.next();
      let escaped = false;
      for (let c = stream.next(); c !== undefined; c = stream.next()) {
        if (c === ch && !escaped) break;
        escaped = !escaped && c === '\\';
      }
      return 'string';
    }
    if (stream.match(/^(0x[0-9a-f]+|\d+(\.\d+)?(e[+-]?\d+)?)[uUlLfF]*/i)) return 'number';
    if (stream.match(/^[A-Za-z_]\w*/)) return C_KEYWORDS.has(stream.current()) ? 'keyword' : 'variableName';
    stream.next();
    return null;
  },
  languageData: { commentTokens: { line: '//', block: { open: '/*', close: '*/' } } },
});

const SH_KEYWORDS = new Set(
  'if then else elif fi for while until do done case esac in function return export local readonly set unset shift exit source'.split(
    ' ',
  ),
);

const hashComments = StreamLanguage.define<Record<string, never>>({
  name: 'shell',
  startState: () => ({}),
  token(stream: StringStream) {
    if (stream.eatSpace()) return null;
    const ch = stream.peek();
    if (ch === '#') {
      stream.skipToEnd();
      return 'comment';
    }
    if (ch === '"' || ch === "'") {
      stream.next();
      let escaped = false;
      for (let c = stream.next(); c !== undefined; c = stream.next()) {
        if (c === ch && !escaped) break;
        escaped = !escaped && c === '\\' && ch === '"';
      }
      return 'string';
    }
    if (stream.match(/^\$(\{[^}]*\}|\w+|[@*#?$!0-9-])/)) return 'variableName';
    if (stream.sol() && stream.match(/^\[[^\]]*\]/)) return 'heading';
    if (stream.match(/^[\w.-]+(?=\s*[=:])/)) return 'propertyName';
    if (stream.match(/^-?\d+(\.\d+)?\b/)) return 'number';
    if (stream.match(/^[A-Za-z_][\w-]*/)) return SH_KEYWORDS.has(stream.current()) ? 'keyword' : null;
    stream.next();
    return null;
  },
  languageData: { commentTokens: { line: '#' } },
});

const C_EXT = new Set([
  'c',
  'h',
  'cc',
  'cpp',
  'cxx',
  'hpp',
  'hh',
  'rs',
  'go',
  'java',
  'kt',
  'swift',
  'cs',
  'dts',
  'dtsi',
  'S',
]);
const HASH_EXT = new Set([
  'sh',
  'bash',
  'zsh',
  'conf',
  'cfg',
  'ini',
  'yaml',
  'yml',
  'toml',
  'mk',
  'cmake',
  'service',
  'env',
  'properties',
]);
const HASH_NAMES = new Set([
  'Makefile',
  'makefile',
  'Dockerfile',
  'Kconfig',
  '.bashrc',
  '.profile',
  '.bash_profile',
  '.gitignore',
  'CMakeLists.txt',
]);

/** The language extension for a file name, or none for plain text. */
export function languageFor(name: string): Extension[] {
  const dot = name.lastIndexOf('.');
  const ext = dot > 0 ? name.slice(dot + 1) : '';
  const lower = ext.toLowerCase();
  if (['js', 'mjs', 'cjs', 'jsx'].includes(lower)) return [javascript({ jsx: lower === 'jsx' })];
  if (['ts', 'mts', 'cts', 'tsx'].includes(lower))
    return [javascript({ typescript: true, jsx: lower === 'tsx' })];
  if (lower === 'py' || lower === 'pyw') return [python()];
  if (lower === 'json' || lower === 'jsonc') return [json()];
  if (lower === 'md' || lower === 'markdown') return [markdown()];
  if (C_EXT.has(ext) || C_EXT.has(lower)) return [cLike];
  if (HASH_EXT.has(lower) || HASH_NAMES.has(name)) return [hashComments];
  return [];
}

/** A short label of the language, shown in the editor's status line. */
export function languageLabel(name: string): string {
  const dot = name.lastIndexOf('.');
  const ext = dot > 0 ? name.slice(dot + 1).toLowerCase() : '';
  if (['js', 'mjs', 'cjs', 'jsx'].includes(ext)) return 'JavaScript';
  if (['ts', 'mts', 'cts', 'tsx'].includes(ext)) return 'TypeScript';
  if (ext === 'py' || ext === 'pyw') return 'Python';
  if (ext === 'json' || ext === 'jsonc') return 'JSON';
  if (ext === 'md' || ext === 'markdown') return 'Markdown';
  if (['c', 'h'].includes(ext)) return 'C';
  if (['cc', 'cpp', 'cxx', 'hpp', 'hh'].includes(ext)) return 'C++';
  if (ext === 'rs') return 'Rust';
  if (ext === 'go') return 'Go';
  if (['sh', 'bash', 'zsh'].includes(ext)) return 'Shell';
  if (['yaml', 'yml'].includes(ext)) return 'YAML';
  if (HASH_EXT.has(ext) || HASH_NAMES.has(name)) return 'Config';
  return 'Text';
}
