// The administration area (issue 38): the page of every /admin section, one chunk that brings its own
// words (words.ts). The layout (sidebar, title) is the console's; the route table decides who sees which section,
// and the page draws the one its path names.
import { useLocation } from '#web/router/router.tsx';
import { AuditSection } from './AuditSection.tsx';
import { BoardsSection } from './BoardsSection.tsx';
import { HostsSection } from './HostsSection.tsx';
import { OrgsSection } from './OrgsSection.tsx';
import { RolesSection } from './RolesSection.tsx';
import { UsersSection } from './UsersSection.tsx';
import { loadAdminWords } from './words.ts';

const SECTIONS = {
  users: UsersSection,
  orgs: OrgsSection,
  roles: RolesSection,
  boards: BoardsSection,
  hosts: HostsSection,
  audit: AuditSection,
} as const;

function AdminPage() {
  const section = useLocation().pathname.split('/')[2] as keyof typeof SECTIONS;
  const Section = SECTIONS[section];
  return Section ? <Section /> : null;
}

/** The page once its words are there (the route's lazy import waits for this). */
export const page = loadAdminWords().then(() => ({ default: AdminPage }));
