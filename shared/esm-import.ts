/**
 * Loading an ES-module package (node-llama-cpp v3, say) from this project, which compiles to
 * CommonJS.
 *
 * tsc (module node16) and @swc/jest both rewrite `import('x')` into `require('x')`, which cannot
 * load an ES module. The import below is built with `new Function`, so neither compiler sees it
 * and Node's real dynamic import runs. It takes an absolute file URL (made from a path that
 * `require.resolve` found) because a Function body has no module of its own to resolve bare names
 * from.
 *
 * Jest's module sandbox has no dynamic import at all: inside jest, importEsm rejects
 * (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING_FLAG). What must load an ES module under jest runs
 * outside the sandbox: the speech engines' worker thread (local/speech-worker.ts) or, for the
 * llama tests, a child Node process.
 */
import { pathToFileURL } from 'node:url';

const dynamicImport = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

/** The ES module at an absolute file path, loaded by Node's own dynamic import. */
export function importEsm(file: string): Promise<unknown> {
  return dynamicImport(pathToFileURL(file).href);
}
