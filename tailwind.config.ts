// Tailwind v4 reads its configuration from CSS (src/web/styles.css, `@theme`); this file documents the
// design tokens' intent and is loaded there with `@config` so editors and plugins find one source.
export default {
  content: ['./index.html', './src/web/**/*.{ts,tsx}'],
  darkMode: 'class',
  theme: {
    extend: {
      width: { sidebar: '180px' },
      fontFamily: { mono: ['JetBrains Mono', 'Menlo', 'Consolas', 'monospace'] },
    },
  },
};
