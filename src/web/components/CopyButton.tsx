// Copy to clipboard, throttled at 1400 ms with a 1000 ms "copied" notice (spec section 9).
import { useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { COPY_NOTICE_MS, COPY_THROTTLE_MS } from '#shared/constants.ts';
import { Button } from './ui.tsx';

export function CopyButton({ text, label }: { text: string; label?: string }) {
  const { t } = useTranslation('common');
  const [copied, setCopied] = useState(false);
  const last = useRef(0);
  const copy = async () => {
    const now = Date.now();
    if (now - last.current < COPY_THROTTLE_MS) return;
    last.current = now;
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // Clipboard API needs a secure context; fall back to a selection copy.
      const area = document.createElement('textarea');
      area.value = text;
      document.body.appendChild(area);
      area.select();
      document.execCommand('copy');
      area.remove();
    }
    setCopied(true);
    window.setTimeout(() => setCopied(false), COPY_NOTICE_MS);
  };
  return (
    <Button size="sm" icon={copied ? 'check' : 'copy'} onClick={copy}>
      {copied ? t('actions.copied') : (label ?? t('actions.copy'))}
    </Button>
  );
}
