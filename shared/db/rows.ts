/**
 * An entity's columns as TypeORM's metadata declares them, for the plain SQL of raw.ts: column
 * lists, values in column order, and rows turned back into entities the way TypeORM would. Built
 * from the metadata, so a column added to an entity is carried here without another edit.
 */
import type { DataSource } from 'typeorm';
import { parseDbDate } from './database';
import type { Row } from './raw';

type ColumnKind = 'int' | 'date' | 'bool' | 'text';

interface MappedColumn {
  property: string;
  column: string;
  kind: ColumnKind;
  /** Nullable with no default: a row that leaves it out of an INSERT gets NULL. */
  nullByDefault: boolean;
}

function kindOf(type: unknown): ColumnKind {
  if (type === 'int' || type === Number) return 'int';
  if (type === 'datetime' || type === Date) return 'date';
  if (type === 'boolean' || type === Boolean) return 'bool';
  return 'text';
}

function hydrated(kind: ColumnKind, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (kind) {
    case 'int':
      return Number(value);
    case 'date':
      return parseDbDate(value as string | Date);
    case 'bool':
      return value === true || Number(value) === 1;
    case 'text':
      return String(value);
  }
}

/** Backticks quote an identifier on MySQL and on SQLite alike (`usage` is reserved on MySQL). */
function quote(name: string): string {
  return `\`${name}\``;
}

export class EntityRows<T extends object> {
  readonly columns: readonly MappedColumn[];
  readonly table: string;

  constructor(
    source: DataSource,
    private readonly entity: new () => T,
  ) {
    const metadata = source.getMetadata(entity);
    this.table = metadata.tableName;
    this.columns = metadata.columns.map((c) => ({ property: c.propertyName, column: c.databaseName, kind: kindOf(c.type), nullByDefault: c.isNullable && c.default === undefined }));
  }

  /** `a.col1 AS p_col1, ...` for a SELECT that reads the whole entity under an alias and prefix. */
  selectList(alias: string, prefix: string): string {
    return this.columns.map((c) => `${alias}.${quote(c.column)} AS ${quote(prefix + c.column)}`).join(', ');
  }

  /** The entity a row holds (its columns under `prefix`), converted as TypeORM converts them. */
  hydrate(row: Row, prefix = ''): T {
    const entity = new this.entity() as Record<string, unknown>;
    for (const c of this.columns) entity[c.property] = hydrated(c.kind, row[prefix + c.column]);
    return entity as T;
  }

  /** The given properties' column names, quoted, in the given order. */
  columnNames(properties: ReadonlyArray<keyof T & string>): string[] {
    return properties.map((property) => {
      const column = this.columns.find((c) => c.property === property);
      if (!column) throw new Error(`${this.table} has no column for ${property}`);
      return quote(column.column);
    });
  }
}
