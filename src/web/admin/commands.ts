// Palette commands of the administration area. Going to each section comes with the route table (the
// palette's navigation commands, permission-filtered like the sidebar); these add the actions that
// start there: add a user, create an organisation or a role, add a board or a board host. Each navigates to its
// section and leaves an intent the section takes (it opens its dialog). The `admin` words load once
// the user holds any administration permission.
import { subscribe } from 'valtio';
import { type PaletteCommand, registerCommands } from '#web/commands/registry.ts';
import { session } from '#web/state/session.ts';
import { type AdminIntent, adminUi } from './state.ts';
import { loadAdminWords } from './words.ts';

const SECTION = 'admin:palette.section';

function action(
  id: string,
  titleKey: string,
  path: string,
  intent: AdminIntent,
  perms: string[],
  keywords: string[],
  extra: Partial<PaletteCommand> = {},
): PaletteCommand {
  return {
    id: `admin.${id}`,
    titleKey: `admin:palette.${titleKey}`,
    section: SECTION,
    keywords,
    perms,
    when: () => !!session.token,
    run: ({ navigate }) => {
      adminUi.intent = intent;
      navigate(path);
    },
    ...extra,
  };
}

export const adminCommands: PaletteCommand[] = [
  action(
    'user.add',
    'addUser',
    '/admin/users',
    'user.create',
    ['rbac.add_user'],
    ['user', 'account', 'admin'],
    {
      aliases: ['new user', 'create user', 'add account'],
      icon: 'user',
    },
  ),
  // Organisations and roles are made by global administrators only (the service's rule): a role holding
  // `*` passes these entries too.
  action(
    'org.add',
    'addOrg',
    '/admin/orgs',
    'org.create',
    ['rbac.add_organization'],
    ['organisation', 'org', 'team'],
    {
      aliases: ['new organization', 'create organization', 'new org'],
      icon: 'layers',
    },
  ),
  action('role.add', 'addRole', '/admin/roles', 'role.create', ['rbac.add_role'], ['role', 'permission'], {
    aliases: ['new role'],
    icon: 'key',
  }),
  action(
    'board.add',
    'addBoard',
    '/admin/boards',
    'board.create',
    ['device.add_device'],
    ['board', 'lab', 'device'],
    {
      aliases: ['new board', 'add device'],
      icon: 'board',
    },
  ),
  action(
    'host.add',
    'addHost',
    '/admin/hosts',
    'host.create',
    ['device.add_device'],
    ['board host', 'host'],
    {
      aliases: ['new board host', 'add host'],
      icon: 'server',
    },
  ),
];

const ADMIN_PERM = /^(\*|rbac\.|audit\.|device\.(add|change|del)_device$|device\.add_image$)/;

let installed = false;

/** Registers the commands once; their words load when (and if) the user may administer anything. */
export function installAdminCommands(): void {
  if (installed) return;
  installed = true;
  registerCommands('admin', adminCommands);
  let loaded = false;
  const check = () => {
    if (loaded || !session.perms.some((p) => ADMIN_PERM.test(p))) return;
    loaded = true;
    void loadAdminWords().catch(() => {
      loaded = false;
    });
  };
  check();
  subscribe(session, check);
}
