// /login-en: the sign-in page in English whatever the language cookie said.
import { useEffect } from 'react';
import { setLanguage } from '#web/i18n/i18n.ts';
import { LoginView } from './LoginPage.tsx';

export default function LoginEnPage() {
  useEffect(() => {
    void setLanguage('en');
  }, []);
  return <LoginView />;
}
