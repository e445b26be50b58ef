// The palette's built-in commands: go to every visible route, switch language, toggle the theme,
// sign out. Rebuilt when the permissions, the route set or the public settings change.
import { useEffect } from 'react';
import { useSnapshot } from 'valtio';
import { LANGUAGES } from '#shared/constants.ts';
import { logoutAndLeave, routeSet } from '#web/auth/flow.ts';
import { openProfile } from '#web/auth/profile-state.ts';
import { openKeyHelp, type PaletteCommand, registerCommands } from '#web/commands/registry.ts';
import { LANGUAGE_LABELS, setLanguage } from '#web/i18n/i18n.ts';
import { routeAllowed } from '#web/router/access.ts';
import { routeTable } from '#web/router/table.ts';
import { flattenRoutes, inSet } from '#web/router/types.ts';
import { toggleTheme } from '#web/state/app.ts';
import { licenceState, licenceValid } from '#web/state/licence.ts';
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

export function preferenceCommands(): PaletteCommand[] {
  return [
    ...LANGUAGES.map(
      (lng): PaletteCommand => ({
        id: `lang.${lng}`,
        titleKey: 'palette:lang.switch',
        titleParams: { language: LANGUAGE_LABELS[lng] },
        section: PREFS,
        keywords: ['language', 'lang', lng, LANGUAGE_LABELS[lng]],
        aliases: [LANGUAGE_LABELS[lng]],
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
      when: () => !!session.token,
      run: () => logoutAndLeave(),
    },
  ];
}

export function useCoreCommands(): void {
  const { perms } = useSnapshot(session);
  const { value } = useSnapshot(publicSettingsState);
  const { detail } = useSnapshot(licenceState);
  // biome-ignore lint/correctness/useExhaustiveDependencies: commands read the public settings (docs link) when built.
  useEffect(() => {
    const licenceOk = licenceValid(detail, Date.now());
    const offs = [
      registerCommands('core.navigation', navigationCommands(perms, licenceOk)),
      registerCommands('core.preferences', preferenceCommands()),
      registerCommands('core.account', accountCommands()),
    ];
    return () => {
      for (const off of offs) off();
    };
  }, [perms, value, detail]);
}
