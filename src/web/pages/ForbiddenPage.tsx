import { ErrorPage } from './ErrorPage.tsx';

export default function ForbiddenPage() {
  return <ErrorPage code="403" titleKey="forbidden.title" textKey="forbidden.text" />;
}
