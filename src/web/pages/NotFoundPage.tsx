import { ErrorPage } from './ErrorPage.tsx';

export default function NotFoundPage() {
  return <ErrorPage code="404" titleKey="notFound.title" textKey="notFound.text" />;
}
