/**
 * The dashboard's build (`npm run build` → dist/web; README "The dashboard"). Hashed file names
 * under assets/ (served immutable), no inline script or style (the page's CSP allows neither),
 * no module-preload polyfill (an inline helper), no source maps shipped.
 */
import path from 'node:path';
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  publicDir: path.join(import.meta.dirname, 'public'),
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: path.join(import.meta.dirname, '..', 'dist', 'web'),
    emptyOutDir: true,
    assetsDir: 'assets',
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: 'es2022',
    reportCompressedSize: false,
  },
});
