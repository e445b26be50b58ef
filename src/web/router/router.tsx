// The console's own router, its React half: the provider that follows the history store
// (useSyncExternalStore) and draws the matched route chain, Outlet (with a context for the page),
// Link and NavLink, Navigate, the hooks the pages use, and an error boundary per route that has an
// errorElement (useRouteError). Matching and history are in history.ts.
import {
  type AnchorHTMLAttributes,
  Component,
  createContext,
  type ErrorInfo,
  type MouseEvent,
  type ReactNode,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useRef,
  useSyncExternalStore,
} from 'react';
import {
  createHistory,
  type History,
  type HistoryHost,
  isActivePath,
  type Location,
  matchRoutes,
  type NavigateOptions,
  type RouteObject as PlainRouteObject,
  type RouteMatch,
  routerHandlesClick,
} from './history.ts';

export type RouteObject = PlainRouteObject<ReactNode>;
export type { Location, NavigateOptions };

export interface Router {
  routes: RouteObject[];
  history: History;
}

/** A router over the browser's history (or a fake one, in tests). */
export function createRouter(routes: RouteObject[], host: HistoryHost = window): Router {
  return { routes, history: createHistory(host) };
}

interface RouterState {
  history: History;
  location: Location;
  matches: RouteMatch<ReactNode>[];
}

const RouterContext = createContext<RouterState | null>(null);
/** Where in the matched chain a component is drawn, and what its Outlet handed down. */
const DepthContext = createContext<{ depth: number; outlet: unknown }>({ depth: -1, outlet: undefined });
const ErrorContext = createContext<unknown>(undefined);

function useRouter(): RouterState {
  const state = useContext(RouterContext);
  if (!state) throw new Error('router: used outside RouterProvider');
  return state;
}

export function RouterProvider({ router }: { router: Router }) {
  const { history, routes } = router;
  const location = useSyncExternalStore(history.subscribe, history.location, history.location);
  const matches = useMemo(() => matchRoutes(routes, location.pathname) ?? [], [routes, location.pathname]);
  const state = useMemo(() => ({ history, location, matches }), [history, location, matches]);
  return (
    <RouterContext.Provider value={state}>
      <MatchView depth={0} outlet={undefined} />
    </RouterContext.Provider>
  );
}

interface BoundaryProps {
  fallback: ReactNode;
  /** A new location clears a caught error (the user navigated away from it). */
  resetKey: string;
  children: ReactNode;
}

export class RouteErrorBoundary extends Component<
  BoundaryProps,
  { error: unknown; key: string; caught: boolean }
> {
  override state = { error: undefined as unknown, key: this.props.resetKey, caught: false };

  static getDerivedStateFromError(error: unknown) {
    return { error, caught: true };
  }

  static getDerivedStateFromProps(props: BoundaryProps, state: { key: string; caught: boolean }) {
    if (props.resetKey !== state.key) return { error: undefined, caught: false, key: props.resetKey };
    return null;
  }

  override componentDidCatch(error: unknown, info: ErrorInfo) {
    console.error('route error', error, info.componentStack);
  }

  override render() {
    if (this.state.caught)
      return <ErrorContext.Provider value={this.state.error}>{this.props.fallback}</ErrorContext.Provider>;
    return this.props.children;
  }
}

/** The route at `depth` of the matched chain; a route without an element draws its child. */
function MatchView({ depth, outlet }: { depth: number; outlet: unknown }) {
  const { matches, location } = useRouter();
  const match = matches[depth];
  if (!match) return null;
  const { route } = match;
  const drawn = (
    <DepthContext.Provider value={{ depth, outlet }}>
      {route.element === undefined || route.element === null ? <Outlet /> : route.element}
    </DepthContext.Provider>
  );
  if (route.errorElement === undefined) return drawn;
  return (
    <RouteErrorBoundary fallback={route.errorElement} resetKey={location.key + location.pathname}>
      {drawn}
    </RouteErrorBoundary>
  );
}

/** Where a route draws its matched child; `context` is what the child reads with useOutletContext. */
export function Outlet({ context }: { context?: unknown }) {
  const { depth } = useContext(DepthContext);
  return <MatchView depth={depth + 1} outlet={context} />;
}

export function useOutletContext<T>(): T {
  return useContext(DepthContext).outlet as T;
}

export function useLocation(): Location {
  return useRouter().location;
}

/** The matched routes, outermost first, each with its handle. */
export function useMatches(): readonly { pathname: string; handle: unknown }[] {
  return useRouter().matches;
}

/** What the nearest route error boundary caught (RouteError). */
export function useRouteError(): unknown {
  return useContext(ErrorContext);
}

export type NavigateFunction = (to: string | number, options?: NavigateOptions) => void;

/** Go to a path (`{ replace }` replaces the current entry), or -1 for back. Stable across renders. */
export function useNavigate(): NavigateFunction {
  const { history } = useRouter();
  return useCallback<NavigateFunction>((to, options) => history.navigate(to, options), [history]);
}

type ParamsInit = URLSearchParams | string | Record<string, string> | [string, string][];

export function useSearchParams(): [URLSearchParams, (next: ParamsInit, options?: NavigateOptions) => void] {
  const { location, history } = useRouter();
  const params = useMemo(() => new URLSearchParams(location.search), [location.search]);
  const set = useCallback(
    (next: ParamsInit, options?: NavigateOptions) => {
      const query = new URLSearchParams(next).toString();
      const here = history.location();
      history.navigate(`${here.pathname}${query ? `?${query}` : ''}${here.hash}`, options);
    },
    [history],
  );
  return [params, set];
}

/** Navigates once rendered (a redirect). */
export function Navigate({ to, replace }: { to: string; replace?: boolean }) {
  const { history } = useRouter();
  const done = useRef(false);
  useEffect(() => {
    // StrictMode runs effects twice: one navigation per mount.
    if (done.current) return;
    done.current = true;
    history.navigate(to, { replace });
  }, [history, to, replace]);
  return null;
}

export interface LinkProps extends Omit<AnchorHTMLAttributes<HTMLAnchorElement>, 'href'> {
  to: string;
  replace?: boolean;
}

function useLinkClick(to: string, replace: boolean | undefined, props: LinkProps) {
  const { history } = useRouter();
  return (e: MouseEvent<HTMLAnchorElement>) => {
    props.onClick?.(e);
    if (!routerHandlesClick(e, props.target)) return;
    e.preventDefault();
    history.navigate(to, { replace });
  };
}

/** An in-app link: a plain click navigates without a reload; others (new tab, window) are the browser's. */
export function Link({ to, replace, ...rest }: LinkProps) {
  const { history } = useRouter();
  const onClick = useLinkClick(to, replace, { to, ...rest });
  return <a {...rest} href={history.resolve(to)} onClick={onClick} />;
}

export interface NavLinkProps extends Omit<LinkProps, 'className'> {
  className?: string | ((state: { isActive: boolean }) => string | undefined);
}

/** A Link that knows whether it is the current section (its path or below): class and aria-current. */
export function NavLink({ className, ...rest }: NavLinkProps) {
  const { location } = useRouter();
  const isActive = isActivePath(rest.to, location.pathname);
  return (
    <Link
      {...rest}
      aria-current={isActive ? 'page' : undefined}
      className={typeof className === 'function' ? className({ isActive }) : className}
    />
  );
}
