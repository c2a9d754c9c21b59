/** A write refused by a unique index (MySQL ER_DUP_ENTRY, SQLite UNIQUE constraint): someone else won the race. */
export function isDuplicateKey(error: unknown): boolean {
  const e = error as { code?: string; message?: string; driverError?: { code?: string } };
  return (
    e.code === 'ER_DUP_ENTRY' ||
    e.driverError?.code === 'ER_DUP_ENTRY' ||
    e.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    /UNIQUE constraint failed|Duplicate entry/i.test(e.message ?? '')
  );
}
