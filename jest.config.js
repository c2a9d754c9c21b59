/**
 * The suite runs once on the embedded stores (SQLite, in-memory limits) and, when
 * TEST_DATABASE_URL / TEST_REDIS_URL are set, again on MySQL + Redis.
 */
const transform = {
  '^.+\\.ts$': [
    '@swc/jest',
    {
      jsc: {
        target: 'es2022',
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true },
        keepClassNames: true,
      },
      module: { type: 'commonjs' },
    },
  ],
};

const base = {
  testEnvironment: 'node',
  transform,
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  moduleFileExtensions: ['ts', 'js', 'json'],
};

const projects = [{ ...base, displayName: 'sqlite', setupFiles: ['<rootDir>/test/setup/sqlite.ts'] }];
if (process.env.TEST_DATABASE_URL || process.env.TEST_REDIS_URL) {
  projects.push({
    ...base,
    displayName: 'mysql+redis',
    setupFiles: ['<rootDir>/test/setup/mysql-redis.ts'],
    // Unit tests of the local engines, the catalog, the config and the URL fetcher touch no
    // store: running them twice only doubles the heaviest native work.
    testPathIgnorePatterns: [
      '/node_modules/',
      '/test/local-(audio|tools|providers)\\.test\\.ts$',
      '/test/(catalog|config|url-fetch|mail|storage|layers|setup|telegram-format|dashboard-bundle|cron-helper)\\.test\\.ts$',
    ],
  });
}

module.exports = {
  projects,
  reporters: ['default', '<rootDir>/test/summary-reporter.js'],
  testTimeout: 30000,
  maxWorkers: 2,
};
