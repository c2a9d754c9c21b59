/**
 * The layer rules of .dependency-cruiser.cjs (run over the real tree by `npm run layers` in
 * `npm test`) catch what they promise: each arrow the architecture forbids is planted in a
 * scratch tree shaped like this one, and the checker must refuse it by the rule's name.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from './helpers/child-process';

const cruiser = path.join(repoRoot, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const config = path.join(repoRoot, '.dependency-cruiser.cjs');

/** Runs the project's rules over a scratch tree made of `files`; the exit code and the report. */
function check(files: Record<string, string>): { code: number | null; report: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-layers-'));
  try {
    fs.writeFileSync(path.join(root, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'node16', moduleResolution: 'node16', strict: true } }));
    for (const [file, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      fs.writeFileSync(path.join(root, file), text);
    }
    const tops = [...new Set(Object.keys(files).map((f) => f.split('/')[0] as string))];
    const run = spawnSync(process.execPath, [cruiser, '--config', config, '--output-type', 'err', ...tops], { cwd: root, encoding: 'utf8' });
    return { code: run.status, report: `${run.stdout}${run.stderr}` };
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

const leaf = 'export const value = 1;\n';
const importing = (from: string): string => `import { value } from '${from}';\nexport const copy = value;\n`;

it('passes a tree that keeps to the layers', () => {
  const result = check({
    'api/routes/a.ts': importing('../../shared/generation/service'),
    'shared/generation/service.ts': importing('../db/database'),
    'shared/db/database.ts': importing('../config/index'),
    'shared/config/index.ts': leaf,
    'api/main.ts': importing('../bot/webhook'),
    'bot/webhook.ts': leaf,
  });
  expect(result).toMatchObject({ code: 0 });
});

it.each([
  ['a bottom layer importing upward', 'bottom-layers-import-nothing-above', { 'shared/db/planted.ts': importing('../generation/service'), 'shared/generation/service.ts': leaf }],
  ['shared importing a shell', 'shared-imports-nothing-above', { 'shared/generation/planted.ts': importing('../../api/presenters/x'), 'api/presenters/x.ts': leaf }],
  ['shared importing the migrations', 'shared-imports-nothing-above', { 'shared/db/data-source.ts': importing('../../migrations/index'), 'migrations/index.ts': leaf }],
  ['one shell importing another', 'shells-never-import-each-other', { 'api/routes/planted.ts': importing('../../bot/handlers/x'), 'bot/handlers/x.ts': leaf }],
  ['the worker importing the api', 'shells-never-import-each-other', { 'worker/planted.ts': importing('../api/app'), 'api/app.ts': leaf }],
  ['a route reaching past the entry points into the runner', 'shells-use-the-entry-points', { 'api/routes/planted.ts': importing('../../shared/generation/runner'), 'shared/generation/runner.ts': leaf }],
  ['the bot writing to the generation store', 'shells-use-the-entry-points', { 'bot/planted.ts': importing('../shared/generation/store'), 'shared/generation/store.ts': leaf }],
  ['money moved outside billing', 'billing-sql-stays-in-billing', { 'shared/accounts/planted.ts': importing('../billing/sql'), 'shared/billing/sql.ts': leaf }],
  ['a cycle', 'no-cycles', { 'shared/generation/a.ts': importing('./b'), 'shared/generation/b.ts': importing('./a') }],
  ['a cycle through types only', 'no-cycles', {
    'shared/generation/a.ts': "import type { B } from './b';\nexport interface A { b?: B }\n",
    'shared/generation/b.ts': "import type { A } from './a';\nexport interface B { a?: A }\n",
  }],
  ['production code importing a test fake', 'production-never-imports-tests', { 'shared/planted.ts': importing('../test/helpers/fake'), 'test/helpers/fake.ts': leaf }],
  ['a migration importing the domain', 'migrations-stand-alone', { 'migrations/1-x.ts': importing('../shared/db/entities'), 'shared/db/entities.ts': leaf }],
])('refuses %s', (_what, rule, files) => {
  const result = check(files);
  expect(result.code).not.toBe(0);
  expect(result.report).toContain(rule);
});
