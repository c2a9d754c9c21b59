/** mysql2's own converter of `:name` placeholders (the package ships no types). */
declare module 'named-placeholders' {
  type Compile = (sql: string, params?: Readonly<Record<string, unknown>>) => [string, unknown[]];
  function createCompiler(config?: { placeholder?: string; cache?: number | false }): Compile;
  export = createCompiler;
}
