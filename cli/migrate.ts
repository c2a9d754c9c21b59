/** Procfile `release`: brings the database schema up to date, then exits. */
import { loadConfig, ConfigError } from '../shared/config';
import { openDatabase } from '../shared/db/data-source';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const dataSource = await openDatabase(config.database, { migrate: false });
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
