/**
 * `npm run --silent admin -- <command>`: prints one JSON object (or `{"error": ...}` and exits 1);
 * a result that says `ok: false` (an audit that found violations) exits 1 too.
 */
import { ADMIN_USAGE, runAdminCommand, UsageError } from './admin-commands';
import { ConfigError, loadConfig } from '../shared/config';
import { buildContainer } from '../shared/container';
import { createLogger } from '../shared/log';
import { migrations } from '../migrations';

async function main(): Promise<number> {
  const config = loadConfig(process.env);
  const container = await buildContainer(config, {
    // The embedded store is migrated by whoever opens it first; MySQL only by `release`.
    migrate: config.database.kind === 'sqlite' ? migrations : undefined,
    log: createLogger('warn', process.stderr),
  });
  try {
    const result = await runAdminCommand(container, process.argv.slice(2));
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return (result as { ok?: unknown }).ok === false ? 1 : 0;
  } finally {
    await container.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    process.stdout.write(`${JSON.stringify({ error: message })}\n`);
    if (error instanceof UsageError || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      process.stderr.write(`${ADMIN_USAGE}\n`);
    } else if (!(error instanceof ConfigError)) {
      process.stderr.write(`${(error as Error).stack ?? message}\n`);
    }
    process.exit(1);
  },
);
