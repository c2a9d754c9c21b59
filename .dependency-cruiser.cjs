/**
 * The layers, checked by `npm run layers` (part of `npm test`):
 *
 *   api/  bot/  worker/     thin shells: receive, call shared/, present
 *     └─────┴──────┴──► shared/   the domain
 *                         config/ errors/ db/   its bottom: import nothing above them
 *
 * Only process entry points (main.ts, {api,bot,worker}/main.ts, worker/clock-main.ts, cli/) compose roles.
 * Type-only imports count: a cycle or an upward arrow through types is still one.
 */
const SHELLS = '^(api|bot|worker)/';
const ENTRY_POINTS = '^(main\\.ts|(api|bot|worker)/main\\.ts|worker/clock-main\\.ts|cli/)';
const ABOVE_SHARED = '^(api|bot|worker|web|cli|bench|test|migrations)/|^main\\.ts$';
const BOTTOM = '^shared/(config|errors|db)/';

module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'A module never depends on itself through others: split out the shared part (often its types).',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'shells-never-import-each-other',
      comment: 'api, bot and worker only use shared/; a process entry point is where roles meet.',
      severity: 'error',
      from: { path: SHELLS, pathNot: ENTRY_POINTS },
      to: { path: ABOVE_SHARED, pathNot: '^$1/' },
    },
    {
      name: 'shells-use-the-entry-points',
      comment:
        'A shell starts, streams, polls, cancels and prices generations through generation/service.ts; the runner, the store, the provider calls and the SQL of billing are the domain\'s own.',
      severity: 'error',
      from: { path: '^(api|bot|worker|cli)/' },
      to: { path: '^shared/(generation/(runner|store|provider-calls|execute|stored-input)|billing/sql)\\.ts$' },
    },
    {
      name: 'billing-sql-stays-in-billing',
      comment: 'Every balance movement goes through shared/billing: its SQL is used nowhere else.',
      severity: 'error',
      from: { pathNot: '^shared/billing/|^test/' },
      to: { path: '^shared/billing/sql\\.ts$' },
    },
    {
      name: 'shared-imports-nothing-above',
      comment: 'shared/ is the domain: it never reaches into a shell, the migrations, tools or tests (callers pass what it needs).',
      severity: 'error',
      from: { path: '^shared/' },
      to: { path: ABOVE_SHARED },
    },
    {
      name: 'bottom-layers-import-nothing-above',
      comment: 'config, errors and db are the bottom of shared/: they import only each other.',
      severity: 'error',
      from: { path: BOTTOM },
      to: { path: '^shared/', pathNot: BOTTOM },
    },
    {
      name: 'migrations-stand-alone',
      comment: 'A migration is frozen history: it must not change when the code it would import does.',
      severity: 'error',
      from: { path: '^migrations/' },
      to: { path: '^(api|bot|worker|shared|web|cli|bench|test)/|^main\\.ts$' },
    },
    {
      name: 'production-never-imports-tests',
      comment: 'Fakes live in test/ (the benchmarks reuse them); production code never asks whether it is being tested.',
      severity: 'error',
      from: { pathNot: '^(test|bench)/' },
      to: { path: '^test/' },
    },
    {
      name: 'production-never-imports-dev-dependencies',
      comment: 'What runs in production is in "dependencies": a dev dependency is not installed there.',
      severity: 'error',
      from: { path: '^(api|bot|worker|shared|cli|migrations)/|^main\\.ts$' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|data)/' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
