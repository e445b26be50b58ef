// Server-rendered pages of the embedded provider: sign-in, registration and errors, in zh/en/ja from
// locales/<lng>/idp.json. The language is the console's `lang` cookie (default zh, spec section 9);
// `?lang=` on a page switches it and sets the cookie. Every interpolated value is HTML-escaped.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import {
  acceptLanguageTags,
  DEFAULT_LANGUAGE,
  LANGUAGES,
  type Language,
  preferredLanguage,
  STORAGE,
} from '#shared/constants.ts';

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

/** The `lang` cookie is untrusted input (any page on a parent or sibling host name can set one). */
const languageCookie = z.enum(LANGUAGES);

/** `?lang=`, else the `lang` cookie, else the browser's Accept-Language, else zh (as the console picks). */
export function languageOf(
  cookieHeader: string | undefined,
  override?: unknown,
  acceptLanguage?: string,
): Language {
  if (isLanguage(override)) return override;
  for (const part of (cookieHeader ?? '').split(';')) {
    const [k, ...rest] = part.trim().split('=');
    // Compared as sent: no language code needs decoding, and a malformed escape must not throw.
    if (k === STORAGE.languageCookie) {
      const v = languageCookie.safeParse(rest.join('=').trim());
      if (v.success) return v.data;
    }
  }
  return preferredLanguage(acceptLanguageTags(acceptLanguage)) ?? DEFAULT_LANGUAGE;
}

export const esc = (v: unknown) =>
  String(v ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

const LANGUAGE_NAMES: Record<Language, string> = { zh: '中文', en: 'English', ja: '日本語' };

// The console's look (src/web/auth/AuthShell.tsx and components/controls.tsx): zinc neutrals, a faint
// violet glow at the top, a white card with a hairline border, the console's gradient mark, a zinc-900
// primary button; dark when the system is.
const STYLE = `
*{box-sizing:border-box}
:root{color-scheme:light dark;--bg:#fafafa;--card:#fff;--line:#e4e4e7;--text:#18181b;--muted:#71717a;--soft:#52525b;
--field:#fff;--field-line:#d4d4d8;--btn:#18181b;--btn-text:#fff;--btn-hover:#27272a;--ring:rgba(139,92,246,.35);
--glow:rgba(139,92,246,.10)}
@media (prefers-color-scheme:dark){:root{--bg:#09090b;--card:#18181b;--line:#27272a;--text:#fafafa;--muted:#a1a1aa;
--soft:#d4d4d8;--field:#09090b;--field-line:#3f3f46;--btn:#fafafa;--btn-text:#18181b;--btn-hover:#e4e4e7;--glow:rgba(139,92,246,.18)}}
body{margin:0;min-height:100vh;display:flex;flex-direction:column;align-items:center;padding:8vh 16px 64px;
font-family:ui-sans-serif,system-ui,-apple-system,"Segoe UI","PingFang SC","Hiragino Sans","Microsoft YaHei",sans-serif;
background:radial-gradient(ellipse 50% 320px at 50% 0,var(--glow),transparent) no-repeat,var(--bg);color:var(--text)}
main{width:min(380px,100%)}
.brand{display:flex;align-items:center;justify-content:center;gap:8px;font-weight:600;font-size:13px;letter-spacing:-.01em;margin-bottom:20px}
.brand svg{flex:none}
h1{font-size:20px;font-weight:600;letter-spacing:-.015em;margin:0 0 6px;text-align:center}
p.sub{margin:0 0 20px;color:var(--muted);font-size:13px;text-align:center}
form,.card{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:20px;box-shadow:0 1px 2px rgba(0,0,0,.05)}
label{display:block;font-size:13px;font-weight:500;margin:14px 0 6px;color:var(--soft)}
label:first-child,form>label:first-of-type{margin-top:0}
input{width:100%;height:36px;padding:0 10px;border:1px solid var(--field-line);border-radius:6px;font-size:14px;
background:var(--field);color:var(--text)}
input:focus{outline:none;border-color:#8b5cf6;box-shadow:0 0 0 3px var(--ring)}
small{display:block;color:var(--muted);font-size:12px;margin-top:4px}
button{width:100%;height:36px;margin-top:20px;border:0;border-radius:6px;background:var(--btn);color:var(--btn-text);
font-size:13px;font-weight:500;cursor:pointer}
button:hover{background:var(--btn-hover)}
button:focus-visible,a:focus-visible{outline:none;box-shadow:0 0 0 3px var(--ring)}
.err{margin:0 0 14px;padding:9px 12px;border-radius:6px;background:#fef2f2;color:#b91c1c;font-size:13px;border:1px solid #fecaca}
.links{display:flex;justify-content:space-between;gap:12px;margin-top:16px;font-size:13px}
a{color:var(--soft);text-decoration:underline;text-decoration-color:var(--line);text-underline-offset:3px;border-radius:4px}
a:hover{color:var(--text);text-decoration-color:currentColor}
footer{margin-top:20px;display:flex;gap:14px;justify-content:center;font-size:12px;color:var(--muted)}
footer a{text-decoration:none;color:var(--muted)}
footer a[aria-current]{font-weight:600;color:var(--text)}
`;

// The console's mark (components/controls.tsx Logo).
const LOGO = `<svg width="22" height="22" viewBox="0 0 24 24" aria-hidden="true"><defs><linearGradient id="bb-logo" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#8b5cf6"/><stop offset="1" stop-color="#0ea5e9"/></linearGradient></defs><rect x="1" y="1" width="22" height="22" rx="6" fill="url(#bb-logo)"/><path d="M7 7h5.5a2.5 2.5 0 0 1 0 5H7zM7 12h6.5a2.5 2.5 0 0 1 0 5H7z" fill="none" stroke="white" stroke-width="1.9" stroke-linejoin="round"/></svg>`;

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
