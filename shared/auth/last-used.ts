/**
 * "Last used" timestamps are kept to the minute: a process writes one at most once a minute per
 * row, so a busy key or session costs one write a minute, not one per request.
 */
export class LastUsedThrottle {
  private readonly lastWrite = new Map<number, number>();

  constructor(private readonly intervalMs: number) {}

  shouldWrite(id: number, now: Date): boolean {
    const previous = this.lastWrite.get(id);
    if (previous !== undefined && now.getTime() - previous < this.intervalMs) return false;
    if (this.lastWrite.size > 100_000) this.lastWrite.clear();
    this.lastWrite.set(id, now.getTime());
    return true;
  }
}
