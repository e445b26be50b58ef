// The palette's built-in commands: go to every visible route, switch language, toggle the theme,
// sign in or out. Loaded after the first paint by useCoreCommands (core-commands.ts).
import { LANGUAGES } from '#shared/constants.ts';
import { goToProvider, logoutAndLeave, routeSet, startSignIn } from '#web/auth/flow.ts';
import { openProfile } from '#web/auth/profile-state.ts';
import { openKeyHelp, type PaletteCommand } from '#web/commands/registry.ts';
import { LANGUAGE_LABELS, setLanguage, t } from '#web/i18n/i18n.ts';
import { routeAllowed } from '#web/router/access.ts';
import { routeTable } from '#web/router/table.ts';
import { flattenRoutes, inSet } from '#web/router/types.ts';
import { toggleTheme } from '#web/state/app.ts';
import { session } from '#web/state/session.ts';
import { publicSettingsState } from '#web/state/settings.ts';

const NAV = 'palette:sections.navigation';
const PREFS = 'palette:sections.preferences';
const ACCOUNT = 'palette:sections.account';

export function navigationCommands(perms: readonly string[], licenceOk: boolean): PaletteCommand[] {
  const set = routeSet();
  const settings = publicSettingsState.value;
  const cmds: PaletteCommand[] = [];
  for (const { path, node, parents } of flattenRoutes(routeTable, set)) {
    const meta = node.meta;
    if (meta.hidden || node.redirect?.[set] || parents.some((p) => p.meta.hidden)) continue;
    if (![node, ...parents].every((n) => routeAllowed(n.meta, { perms, licenceValid: licenceOk }))) continue;
    cmds.push({
      id: `nav.${path}`,
      titleKey: 'palette:nav.goto',
      paramKeys: { title: `layout:${meta.titleKey}` },
      section: NAV,
      keywords: [path],
      icon: meta.icon ?? parents[0]?.meta.icon ?? 'arrowRight',
      when: meta.public ? undefined : () => !!session.token,
      run: ({ navigate }) => navigate(path),
    });
  }
  for (const node of routeTable) {
    if (!node.meta.external || !inSet(node, set)) continue;
    const href = typeof node.meta.external === 'function' ? node.meta.external(settings) : node.meta.external;
    if (!href) continue;
    cmds.push({
      id: `nav.external.${node.path}`,
      titleKey: 'palette:nav.open',
      paramKeys: { title: `layout:${node.meta.titleKey}` },
      section: NAV,
      keywords: ['docs', 'documentation', 'help'],
      aliases: ['docs', 'help', 'manual'],
      icon: 'external',
      run: () => {
        window.open(href, '_blank', 'noopener,noreferrer');
      },
    });
  }
  return cmds;
}

/** What people call each language, in the three languages (typed to find its switch). */
const LANGUAGE_NAMES: Record<string, readonly string[]> = {
  zh: ['chinese', 'simplified chinese', '中文', '汉语', '简体中文', '中国語'],
  en: ['english', '英文', '英语', '英語'],
  ja: ['japanese', '日文', '日语', '日本語'],
};

export function preferenceCommands(): PaletteCommand[] {
  return [
    ...LANGUAGES.map(
      (lng): PaletteCommand => ({
        id: `lang.${lng}`,
        titleKey: 'palette:lang.switch',
        titleParams: { language: LANGUAGE_LABELS[lng] },
        section: PREFS,
        keywords: ['language', 'lang', lng, LANGUAGE_LABELS[lng]],
        aliases: [LANGUAGE_LABELS[lng], ...(LANGUAGE_NAMES[lng] ?? [])],
        icon: 'globe',
        run: () => setLanguage(lng),
      }),
    ),
    {
      id: 'help.keys',
      titleKey: 'palette:help.keys',
      section: PREFS,
      keywords: ['keyboard', 'shortcuts', 'keys', 'help', 'keymap', 'hotkeys'],
      aliases: ['keyboard shortcuts', 'shortcuts', 'keybindings', 'help'],
      shortcut: ['?'],
      icon: 'keyboard',
      run: () => openKeyHelp(),
    },
    {
      id: 'theme.toggle',
      titleKey: 'palette:theme.toggle',
      section: PREFS,
      keywords: ['theme', 'dark', 'light'],
      aliases: ['dark mode', 'light mode', 'dark theme', 'light theme'],
      shortcut: [],
      icon: 'moon',
      run: () => toggleTheme(),
    },
  ];
}

export function accountCommands(): PaletteCommand[] {
  return [
    {
      id: 'account.signin',
      titleKey: 'palette:account.signin',
      section: ACCOUNT,
      keywords: ['login', 'sign in', 'log in'],
      aliases: ['log in', 'login', 'sign in', 'signin', '登录', 'ログイン', 'サインイン'],
      icon: 'key',
      when: () => !session.token,
      run: () => void startSignIn(),
    },
    {
      id: 'account.register',
      titleKey: 'palette:account.register',
      section: ACCOUNT,
      keywords: ['register', 'sign up', 'account', 'new user'],
      aliases: ['sign up', 'signup', 'register', 'create account', '注册', '登録', 'アカウント作成'],
      icon: 'user',
      when: () => !session.token,
      run: async ({ navigate }) => {
        if (!(await goToProvider('register'))) navigate('/register');
      },
    },
    {
      id: 'account.avatar',
      titleKey: 'palette:account.avatar',
      section: ACCOUNT,
      keywords: ['avatar', 'profile'],
      aliases: ['profile picture', 'avatar'],
      icon: 'image',
      when: () => !!session.token,
      run: () => openProfile(true),
    },
    {
      id: 'account.logout',
      titleKey: 'palette:account.logout',
      section: ACCOUNT,
      keywords: ['logout', 'sign out'],
      aliases: [
        'log out',
        'logout',
        'sign out',
        'sign off',
        'log off',
        'exit',
        '登出',
        '注销',
        '退出',
        'ログアウト',
        'サインアウト',
      ],
      icon: 'logout',
      destructive: true,
      when: () => !!session.token,
      // Signing out ends every open shell of this tab: asked first (Keep is chosen, Enter keeps).
      args: [
        {
          key: 'confirm',
          promptKey: 'palette:account.logoutAsk',
          options: () => [
            { value: 'stay', label: t('palette:account.stay') },
            { value: 'logout', label: t('palette:account.logoutYes') },
          ],
        },
      ],
      run: (_ctx, { confirm }) => {
        if (confirm === 'logout') logoutAndLeave();
      },
    },
  ];
}
