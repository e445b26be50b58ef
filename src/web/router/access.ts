// Which routes, menu entries and tabs a user sees (spec sections 2 and 6). Pure functions over the
// route table; the permission rule itself is the shared one the server uses.
import { hasPermission } from '#shared/permissions.ts';
import type { IconName } from '#web/components/icons.tsx';
import { type AccessContext, inSet, joinPath, type RouteMeta, type RouteNode, type TabDef } from './types.ts';

export function routeAllowed(meta: RouteMeta, ctx: Pick<AccessContext, 'perms' | 'licenceValid'>): boolean {
  if (meta.licenceRequired && !ctx.licenceValid) return false;
  return hasPermission(meta.perms, ctx.perms);
}

export interface MenuItem {
  key: string;
  titleKey: string;
  icon?: IconName;
  /** In-app path, or an external href (opens in a new tab). */
  path?: string;
  href?: string;
  children?: MenuItem[];
}

function visible(node: RouteNode, ctx: AccessContext): boolean {
  return !node.meta.hidden && inSet(node, ctx.routeSet) && routeAllowed(node.meta, ctx);
}

function toItem(node: RouteNode, base: string, ctx: AccessContext): MenuItem | null {
  if (!visible(node, ctx)) return null;
  const path = joinPath(base, node.path);
  if (node.meta.external) {
    const href =
      typeof node.meta.external === 'function' ? node.meta.external(ctx.settings) : node.meta.external;
    if (!href) return null;
    return { key: path, titleKey: node.meta.titleKey, icon: node.meta.icon, href };
  }
  if (!node.children?.length) return { key: path, titleKey: node.meta.titleKey, icon: node.meta.icon, path };
  const children = node.children.map((c) => toItem(c, path, ctx)).filter((c): c is MenuItem => c !== null);
  if (children.length === 0) return null;
  // A single visible child collapses into one entry: the child, with the parent's icon if it has none.
  if (children.length === 1 && !children[0].children)
    return { ...children[0], icon: children[0].icon ?? node.meta.icon };
  return { key: path, titleKey: node.meta.titleKey, icon: node.meta.icon, children };
}

/** The sidebar: the layout routes and external links of the table, filtered and collapsed. */
export function buildMenu(nodes: readonly RouteNode[], ctx: AccessContext): MenuItem[] {
  return nodes
    .filter((n) => n.frame === 'layout' || (n.meta.external && !n.children))
    .map((n) => toItem(n, '', ctx))
    .filter((i): i is MenuItem => i !== null);
}

export function visibleTabs(tabs: readonly TabDef[] | undefined, perms: readonly string[]): TabDef[] {
  return (tabs ?? []).filter((tab) => !tab.hidden && hasPermission(tab.perms, perms));
}

/** Spec section 2: the activeTab query, then the activeTab cookie, then the default, then the first visible tab. */
export function resolveActiveTab(
  tabs: readonly TabDef[],
  query: string | null | undefined,
  cookie: string | null | undefined,
  fallback: string | undefined,
): string | undefined {
  const names = tabs.map((t) => t.name);
  for (const candidate of [query, cookie, fallback]) {
    if (candidate && names.includes(candidate)) return candidate;
  }
  return names[0];
}

/** Redirect targets after sign-in: same-origin paths of the table only, matched exactly. */
export function safeRedirect(
  target: string | undefined | null,
  knownPaths: readonly string[],
): string | null {
  if (!target?.startsWith('/') || target.startsWith('//') || target.includes('\\')) return null;
  const pathOnly = target.split(/[?#]/)[0];
  if (!knownPaths.includes(pathOnly)) return null;
  return target;
}
