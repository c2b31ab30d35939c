/** Vite's `?raw` imports: a file's text, e.g. the README for test/http/error-table.test.ts. */
declare module "*?raw" {
  const text: string;
  export default text;
}
