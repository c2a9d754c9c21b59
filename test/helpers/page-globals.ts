/**
 * The few browser globals the Chromium suites touch inside `page.evaluate`, typed here: the
 * project's tsconfig has no DOM library (server code must not see `window` or `document`), and
 * these callbacks run in the page, not in Node.
 */
export interface PageNode {
  textContent: string | null;
}

export interface PageImage extends PageNode {
  complete: boolean;
  naturalWidth: number;
}

export interface PageWindow {
  localStorage: Record<string, string>;
  sessionStorage: Record<string, string>;
  innerWidth: number;
  document: {
    cookie: string;
    body: PageNode;
    documentElement: { lang: string; scrollWidth: number };
    querySelector(selector: string): (PageImage & PageNode) | null;
    addEventListener(type: 'securitypolicyviolation', listener: (event: { violatedDirective: string; blockedURI: string }) => void): void;
  };
  MutationObserver: new (callback: () => void) => { observe(target: PageNode, options: Record<string, boolean>): void };
  __streamed?: string[];
  __cspViolations?: string[];
  axe?: { run(context: unknown, options: unknown): Promise<{ passes: unknown[]; violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: string[] }> }> }> };
}

