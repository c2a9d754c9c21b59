/** Procfile `release`: brings the database schema up to date, then exits. */
import { loadConfig, ConfigError } from '../shared/config';
import { createDataSource } from '../shared/db/data-source';
import { migrations } from '../migrations';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const dataSource = await createDataSource(config.database, migrations);
  await dataSource.initialize();
  try {
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    process.stdout.write(`${JSON.stringify({ migrated: applied.map((m) => m.name), database: config.database.kind })}\n`);
  } finally {
    await dataSource.destroy();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`gensvc release: ${error instanceof ConfigError ? error.message : String((error as Error).stack ?? error)}\n`);
  process.exit(1);
});
