// Turns the route table into the console router's routes (src/web/router/router.tsx) for one route
// set: bare pages at the top, console pages inside the slim console frame, layout routes inside the
// sidebar layout; every route carries its meta on `handle`; anything else goes to /404.
import { Suspense } from 'react';
import { ConsoleFrame } from '#web/layout/ConsoleFrame.tsx';
import { Layout } from '#web/layout/Layout.tsx';
import { PageLoading } from '#web/layout/PageLoading.tsx';
import { Root } from '#web/layout/Root.tsx';
import { RouteError } from '#web/layout/RouteError.tsx';
import { pages } from '#web/router/pages.tsx';
import { Navigate, type RouteObject, createRouter as routerOf } from '#web/router/router.tsx';
import type { PageKey } from '#web/router/table.ts';
import { inSet, joinPath, type RouteNode, type RouteSetName } from '#web/router/types.ts';

function element(node: RouteNode<PageKey>, set: RouteSetName) {
  const redirect = node.redirect?.[set];
  if (redirect) return <Navigate to={redirect} replace />;
  if (!node.page) return null;
  const Page = pages[node.page];
  return (
    <Suspense fallback={<PageLoading />}>
      <Page {...(node.props ?? {})} />
    </Suspense>
  );
}

function leaf(node: RouteNode<PageKey>, path: string, set: RouteSetName): RouteObject {
  return { path: node.path, element: element(node, set), handle: { meta: node.meta, path } };
}

export function buildRoutes(table: readonly RouteNode<PageKey>[], set: RouteSetName): RouteObject[] {
  const nodes = table.filter((n) => inSet(n, set) && !n.meta.external);
  const bare = nodes.filter((n) => (n.frame ?? 'bare') === 'bare').map((n) => leaf(n, n.path, set));
  const framed = nodes.filter((n) => n.frame === 'console').map((n) => leaf(n, n.path, set));
  const layout = nodes
    .filter((n) => n.frame === 'layout')
    .map((n): RouteObject => {
      const children = (n.children ?? []).filter((c) => inSet(c, set));
      return {
        path: n.path,
        handle: { meta: n.meta, path: n.path },
        children: [
          ...(children[0]
            ? [{ index: true, element: <Navigate to={joinPath(n.path, children[0].path)} replace /> }]
            : []),
          ...children.map((c) => leaf(c, joinPath(n.path, c.path), set)),
        ],
      };
    });
  return [
    {
      element: <Root />,
      errorElement: <RouteError />,
      children: [
        ...bare,
        { element: <ConsoleFrame />, children: framed },
        ...(layout.length ? [{ element: <Layout />, children: layout }] : []),
        {
          path: '*',
          element: <Navigate to="/404" replace />,
          handle: { meta: { titleKey: 'routes.notFound', public: true, hidden: true }, path: '*' },
        },
      ],
    },
  ];
}

export function createRouter(table: readonly RouteNode<PageKey>[], set: RouteSetName) {
  return routerOf(buildRoutes(table, set));
}
