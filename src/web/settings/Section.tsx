// A settings section: its title and description on the left, its controls on the right.
import { Card } from '#web/components/ui.tsx';

export function Section({
  title,
  description,
  children,
}: {
  title: string;
  description?: string;
  children: React.ReactNode;
}) {
  return (
    <Card className="p-0">
      <div className="grid gap-4 p-5 md:grid-cols-[220px_1fr]">
        <div>
          <h2 className="text-sm font-semibold text-zinc-900 dark:text-zinc-100">{title}</h2>
          {description ? (
            <p className="mt-1 text-xs leading-relaxed text-zinc-500 dark:text-zinc-400">{description}</p>
          ) : null}
        </div>
        <div>{children}</div>
      </div>
    </Card>
  );
}
