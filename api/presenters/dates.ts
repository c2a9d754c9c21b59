/** Every date in a response: ISO 8601 in UTC, or null. */
export function iso(date: Date | null): string | null {
  return date ? date.toISOString() : null;
}
