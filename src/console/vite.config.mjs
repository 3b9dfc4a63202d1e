// The console's build: src/console → dist/console, served at /console/ by src/routes/console.ts.
// React's JSX is compiled by Vite's own esbuild (no plugin); everything is bundled, nothing is fetched
// from another host at run time.
import { fileURLToPath } from 'node:url';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

export default {
  root: here('.'),
  base: '/console/',
  esbuild: { jsx: 'automatic' },
  build: { outDir: here('../../dist/console'), emptyOutDir: true, chunkSizeWarningLimit: 2048 },
};
