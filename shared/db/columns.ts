/**
 * Column shapes that both SQLite and MySQL/MariaDB round-trip exactly: integers for token amounts,
 * millisecond datetimes stored in UTC, bounded varchars. Entities use these instead of raw options.
 */
import { Column, ColumnOptions } from 'typeorm';

export function TimestampColumn(name: string, options: { nullable?: boolean } = {}): PropertyDecorator {
  return Column({ name, type: 'datetime', precision: 3, nullable: options.nullable ?? false });
}

export function IntColumn(name: string, options: Pick<ColumnOptions, 'nullable' | 'default'> = {}): PropertyDecorator {
  return Column({ name, type: 'int', ...options });
}

export function StringColumn(
  name: string,
  length: number,
  options: Pick<ColumnOptions, 'nullable' | 'default' | 'unique'> = {},
): PropertyDecorator {
  return Column({ name, type: 'varchar', length, ...options });
}

export function BoolColumn(name: string, options: Pick<ColumnOptions, 'default'> = {}): PropertyDecorator {
  return Column({ name, type: 'boolean', ...options });
}
