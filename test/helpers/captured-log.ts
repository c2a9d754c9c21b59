/** A pino destination keeping every line, parsed: for tests that read what the app logs. */
import type { DestinationStream } from 'pino';

export interface CapturedLine {
  level: number;
  msg: string;
  requestId?: string;
  generationId?: number;
  job?: string;
  [field: string]: unknown;
}

export class CapturedLog implements DestinationStream {
  lines: CapturedLine[] = [];

  write(line: string): void {
    this.lines.push(JSON.parse(line) as CapturedLine);
  }

  clear(): void {
    this.lines = [];
  }

  withMessage(msg: string): CapturedLine[] {
    return this.lines.filter((l) => l.msg === msg);
  }
}
