// Server-rendered pages of the embedded provider: sign-in, registration and errors, in zh/en/ja from
// locales/<lng>/idp.json. The language is the console's `lang` cookie (default zh, spec section 9);
// `?lang=` on a page switches it and sets the cookie. Every interpolated value is HTML-escaped.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_LANGUAGE, LANGUAGES, type Language, STORAGE } from '#shared/constants.ts';

type Texts = Record<string, unknown>;

const localesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../locales');

const texts: Record<Language, Texts> = Object.fromEntries(
  LANGUAGES.map((l) => [
    l,
    JSON.parse(fs.readFileSync(path.join(localesDir, l, 'idp.json'), 'utf8')) as Texts,
  ]),
) as Record<Language, Texts>;

export function t(lang: Language, key: string, vars: Record<string, string | number> = {}): string {
  const lookup = (l: Language) =>
    key
      .split('.')
      .reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Texts)[k] : undefined), texts[l]);
  const found = lookup(lang) ?? lookup('en');
  const text = typeof found === 'string' ? found : key;
  return text.replace(/\{\{(\w+)\}\}/g, (_, v: string) => String(vars[v] ?? ''));
}

export function isLanguage(v: unknown): v is Language {
  return typeof v === 'string' && (LANGUAGES as readonly string[]).includes(v);
}

export function languageOf(cookieHeader: string | undefined, override?: unknown): Language {
  if (isLanguage(override)) return override;
  for (const part of (cookieHeader ?? '').split(';')) {
    const [k, ...rest] = part.trim().split('=');
    if (k === STORAGE.languageCookie) {
      const v = decodeURIComponent(rest.join('='));
      if (isLanguage(v)) return v;
    }
  }
  return DEFAULT_LANGUAGE;
}

export const esc = (v: unknown) =>
  String(v ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

const LANGUAGE_NAMES: Record<Language, string> = { zh: '中文', en: 'English', ja: '日本語' };

const STYLE = `
*{box-sizing:border-box}
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;
font-family:-apple-system,BlinkMacSystemFont,"Segoe UI","PingFang SC","Hiragino Sans","Microsoft YaHei",sans-serif;
background:linear-gradient(135deg,#0f172a 0%,#1e3a5f 55%,#0e7490 100%);color:#0f172a}
main{width:min(420px,calc(100vw - 32px));background:#fff;border-radius:14px;padding:32px 32px 24px;
box-shadow:0 24px 60px rgba(2,6,23,.35)}
.brand{display:flex;align-items:center;gap:10px;font-weight:700;font-size:15px;color:#0e7490;letter-spacing:.02em}
.brand svg{flex:none}
h1{font-size:22px;margin:18px 0 4px}
p.sub{margin:0 0 20px;color:#475569;font-size:14px}
label{display:block;font-size:13px;font-weight:600;margin:14px 0 6px;color:#334155}
input{width:100%;padding:10px 12px;border:1px solid #cbd5e1;border-radius:8px;font-size:15px;background:#f8fafc}
input:focus{outline:none;border-color:#0891b2;box-shadow:0 0 0 3px rgba(8,145,178,.2);background:#fff}
small{display:block;color:#64748b;font-size:12px;margin-top:4px}
button{width:100%;margin-top:22px;padding:11px;border:0;border-radius:8px;background:#0e7490;color:#fff;
font-size:15px;font-weight:600;cursor:pointer}
button:hover{background:#155e75}
.err{margin:0 0 8px;padding:10px 12px;border-radius:8px;background:#fef2f2;color:#b91c1c;font-size:14px;border:1px solid #fecaca}
.links{display:flex;justify-content:space-between;gap:12px;margin-top:18px;font-size:13px}
a{color:#0e7490;text-decoration:none}a:hover{text-decoration:underline}
footer{margin-top:22px;padding-top:14px;border-top:1px solid #e2e8f0;display:flex;gap:12px;justify-content:center;font-size:12px;color:#64748b}
footer a[aria-current]{font-weight:700;color:#0f172a}
`;

const LOGO = `<svg width="28" height="28" viewBox="0 0 32 32" aria-hidden="true"><rect x="4" y="4" width="24" height="24" rx="5" fill="#0e7490"/><rect x="10" y="10" width="12" height="12" rx="2" fill="#fff"/><path d="M8 1v4M16 1v4M24 1v4M8 27v4M16 27v4M24 27v4M1 8h4M1 16h4M1 24h4M27 8h4M27 16h4M27 24h4" stroke="#0e7490" stroke-width="2"/></svg>`;

function page(lang: Language, title: string, body: string, hrefFor: (l: Language) => string): string {
  const switcher = LANGUAGES.map(
    (l) =>
      `<a href="${esc(hrefFor(l))}" lang="${l}"${l === lang ? ' aria-current="true"' : ''}>${LANGUAGE_NAMES[l]}</a>`,
  ).join('');
  return `<!doctype html><html lang="${lang === 'zh' ? 'zh-CN' : lang}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">
<title>${esc(title)} · ${esc(t(lang, 'product'))}</title><style>${STYLE}</style></head>
<body><main><div class="brand">${LOGO}<span>${esc(t(lang, 'product'))}</span></div>${body}
<footer aria-label="${esc(t(lang, 'language'))}">${switcher}</footer></main></body></html>`;
}

export interface SignInView {
  lang: Language;
  uid: string;
  username?: string;
  error?: string;
  registerAllowed: boolean;
}

export function renderSignIn(v: SignInView): string {
  const base = `/idp/interaction/${encodeURIComponent(v.uid)}`;
  const body = `<h1>${esc(t(v.lang, 'title.signin'))}</h1><p class="sub">${esc(t(v.lang, 'subtitle.signin'))}</p>
${v.error ? `<p class="err" role="alert" data-testid="idp-error">${esc(v.error)}</p>` : ''}
<form method="post" action="${esc(`${base}/login`)}" autocomplete="on" data-testid="idp-signin">
<label for="username">${esc(t(v.lang, 'field.username'))}</label>
<input id="username" name="username" autocomplete="username" required maxlength="64" value="${esc(v.username)}" autofocus>
<label for="password">${esc(t(v.lang, 'field.password'))}</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="256">
<button type="submit">${esc(t(v.lang, 'action.signin'))}</button></form>
<div class="links">${v.registerAllowed ? `<a href="${esc(`${base}?screen=register`)}" data-testid="idp-to-register">${esc(t(v.lang, 'link.toRegister'))}</a>` : '<span></span>'}
<a href="${esc(`${base}/abort`)}">${esc(t(v.lang, 'action.cancel'))}</a></div>`;
  return page(v.lang, t(v.lang, 'title.signin'), body, (l) => `${base}?lang=${l}`);
}

export interface RegisterView {
  lang: Language;
  uid: string;
  values?: { username?: string; name?: string; email?: string };
  error?: string;
}

export function renderRegister(v: RegisterView): string {
  const base = `/idp/interaction/${encodeURIComponent(v.uid)}`;
  const val = v.values ?? {};
  const body = `<h1>${esc(t(v.lang, 'title.register'))}</h1><p class="sub">${esc(t(v.lang, 'subtitle.register'))}</p>
${v.error ? `<p class="err" role="alert" data-testid="idp-error">${esc(v.error)}</p>` : ''}
<form method="post" action="${esc(`${base}/register`)}" data-testid="idp-register">
<label for="username">${esc(t(v.lang, 'field.username'))}</label>
<input id="username" name="username" autocomplete="username" required maxlength="64" value="${esc(val.username)}" autofocus>
<small>${esc(t(v.lang, 'hint.username'))}</small>
<label for="name">${esc(t(v.lang, 'field.name'))}</label>
<input id="name" name="name" autocomplete="name" maxlength="100" value="${esc(val.name)}">
<label for="email">${esc(t(v.lang, 'field.email'))}</label>
<input id="email" name="email" type="email" autocomplete="email" maxlength="254" value="${esc(val.email)}">
<label for="password">${esc(t(v.lang, 'field.password'))}</label>
<input id="password" name="password" type="password" autocomplete="new-password" required minlength="8" maxlength="256">
<small>${esc(t(v.lang, 'hint.password'))}</small>
<label for="password2">${esc(t(v.lang, 'field.password2'))}</label>
<input id="password2" name="password2" type="password" autocomplete="new-password" required minlength="8" maxlength="256">
<button type="submit">${esc(t(v.lang, 'action.register'))}</button></form>
<div class="links"><a href="${esc(base)}" data-testid="idp-to-signin">${esc(t(v.lang, 'link.toSignin'))}</a>
<a href="${esc(`${base}/abort`)}">${esc(t(v.lang, 'action.cancel'))}</a></div>`;
  return page(v.lang, t(v.lang, 'title.register'), body, (l) => `${base}?screen=register&lang=${l}`);
}

export function renderError(lang: Language, message: string): string {
  const body = `<h1>${esc(t(lang, 'title.error'))}</h1><p class="err" role="alert" data-testid="idp-error">${esc(message)}</p>
<div class="links"><a href="/">${esc(t(lang, 'link.backToConsole'))}</a></div>`;
  return page(lang, t(lang, 'title.error'), body, (l) => `?lang=${l}`);
}

/** Headers of every provider page: no caching, no framing, nothing but inline styles and forms. */
export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
};
