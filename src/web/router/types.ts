// The shape of the one route table (spec section 2). Pure types and helpers, no React: the menu,
// the guard and the palette read the same table, and the unit tests read these helpers.
import type { PublicSettings } from '#shared/system.ts';
import type { IconName } from '#web/components/icons.tsx';

export type RouteSetName = 'full' | 'reduced';

/** Where a page is drawn: bare (sign-in pages), in the slim console frame, or in the sidebar layout. */
export type Frame = 'bare' | 'console' | 'layout';

export interface TabDef {
  name: string;
  /** Key in the layout namespace. */
  titleKey: string;
  hidden?: boolean;
  perms?: readonly string[];
}

export interface RouteMeta {
  /** Title key in the layout namespace; the page title is "<title> - Bianbu Cloud". */
  titleKey: string;
  icon?: IconName;
  hidden?: boolean;
  perms?: readonly string[];
  licenceRequired?: boolean;
  /** No sign-in needed (spec section 2). */
  public?: boolean;
  /** An external link (menu entry opens in a new tab). A function reads it from the public settings. */
  external?: string | ((settings: PublicSettings | null) => string | undefined);
  tabs?: readonly TabDef[];
  defaultTab?: string;
  /** Key of an optional green help alert above the page. */
  helpKey?: string;
  /** Only in these route sets; absent means both. */
  sets?: readonly RouteSetName[];
}

export interface RouteNode<Page = unknown> {
  /** Absolute for top-level nodes, relative for children. */
  path: string;
  meta: RouteMeta;
  frame?: Frame;
  page?: Page;
  /** Props passed to the page (the device list's scope). */
  props?: Record<string, unknown>;
  /** Per route set: navigate elsewhere instead of rendering. */
  redirect?: Partial<Record<RouteSetName, string>>;
  children?: readonly RouteNode<Page>[];
}

export interface AccessContext {
  perms: readonly string[];
  licenceValid: boolean;
  routeSet: RouteSetName;
  settings: PublicSettings | null;
}

export function joinPath(parent: string, child: string): string {
  if (child.startsWith('/')) return child;
  if (!child) return parent;
  return `${parent.replace(/\/$/, '')}/${child}`;
}

export function inSet(node: RouteNode, set: RouteSetName): boolean {
  return !node.meta.sets || node.meta.sets.includes(set);
}

/** Every concrete path of the table with its meta (children flattened, absolute paths). */
export function flattenRoutes<P>(
  nodes: readonly RouteNode<P>[],
  set: RouteSetName,
  parent = '',
): { path: string; node: RouteNode<P>; parents: RouteNode<P>[] }[] {
  const out: { path: string; node: RouteNode<P>; parents: RouteNode<P>[] }[] = [];
  const walk = (list: readonly RouteNode<P>[], base: string, parents: RouteNode<P>[]) => {
    for (const node of list) {
      if (!inSet(node, set) || node.meta.external) continue;
      const path = joinPath(base, node.path);
      if (node.children?.length) walk(node.children, path, [...parents, node]);
      else out.push({ path, node, parents });
    }
  };
  walk(nodes, parent, []);
  return out;
}
