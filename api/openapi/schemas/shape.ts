/**
 * Compile-time agreement of a presenter with the schema that documents it: what the schema allows
 * must be something the presenter's type allows (the schema may be narrower: literals and enums
 * where the presenter says string), and both must name the same top-level fields. Nulls are left
 * out of the comparison: TypeScript types `list[0]?.id ?? null` as a string, so the schema's
 * nullable fields are checked at run time instead (test/openapi.test.ts).
 * `const check: PresenterMatches<ReturnType<typeof presentX>, typeof XSchema> = true;` stops the
 * build when either side gains, loses or retypes a field, so the document cannot drift silently
 * from what the API sends (test/openapi.test.ts also validates real answers against it).
 */
import type { z } from 'zod';

type SameKeys<A, B> = [Exclude<keyof A, keyof B>] extends [never] ? ([Exclude<keyof B, keyof A>] extends [never] ? true : false) : false;

type Unnull<T> = T extends object ? { [K in keyof T]: Unnull<NonNullable<T[K]>> } : NonNullable<T>;

export type PresenterMatches<Presented, Schema extends z.ZodType> = [Unnull<z.output<Schema>>] extends [Unnull<Presented>] ? SameKeys<Presented, z.output<Schema>> : false;

/**
 * Every member of the string union `U`, listed for a `z.enum`: a member missing from the list is a
 * compile error naming it (PresenterMatches alone lets a schema allow fewer values than a presenter sends).
 */
export function everyValueOf<U extends string>() {
  return <const V extends readonly [U, ...U[]]>(values: V & ([Exclude<U, V[number]>] extends [never] ? unknown : { missing: Exclude<U, V[number]> })): V => values;
}
