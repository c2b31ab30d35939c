// The layer rules of src/, written once and checked by dependency-cruiser in `npm run check`
// (`npm run lint:deps`). docs/architecture.md draws the same layers; change both together.

/**
 * What each folder of src/ may import from the rest of src/ (its own files always). A folder missing
 * from a list is a layer above it: importing it would be a loop or an upward reach. `env.ts` and
 * `index.ts` are the two files at src/'s top level.
 */
const ALLOWED = {
  // The wire: API schemas, task and event shapes, limits, error codes, states, and the crypto its protocols
  // share (hex, HMAC-SHA256, constant-time compare). Imports nothing of src/.
  contracts: [],
  // The Drizzle schema and the D1 handle.
  db: ["contracts"],
  // What the Worker and its Durable Objects say to each other (zod schemas and RPC interfaces).
  protocols: ["contracts", "db"],
  // The bindings, typed by the protocols; the token rule, with the development token of the limits.
  "env.ts": ["contracts", "protocols"],
  // One function per state change; the only code that touches the task tables (eslint.config.js).
  engine: ["contracts", "db"],
  storage: ["contracts"],
  // The processor interface and registry: the core knows processors only through these.
  processors: ["contracts", "env.ts", "storage"],
  // Built-in processors as plugins: they see the processor interface, never the core's internals.
  plugins: ["contracts", "env.ts", "processors", "storage"],
  // Which database: the directory, routes over partitions, moves.
  shards: ["contracts", "db", "engine", "env.ts"],
  health: ["contracts", "db", "engine", "processors", "shards"],
  // The one owner of what follows a state change: wake-ups, events, relays, alerts.
  effects: ["contracts", "db", "engine", "env.ts", "health", "protocols", "shards"],
  // Push dispatch: runs leased tasks through their processors, reporting its changes to the effects owner.
  dispatch: ["contracts", "db", "effects", "engine", "env.ts", "processors", "storage"],
  // The event hub (a Durable Object) and its buffer.
  events: ["contracts", "db", "engine", "env.ts", "protocols", "shards"],
  // Schedules and the Scheduler (a Durable Object).
  schedules: ["contracts", "db", "effects", "engine", "env.ts", "protocols", "shards"],
  metrics: ["contracts", "db", "engine", "health", "schedules", "shards"],
  // The queue-partition coordinator (a Durable Object).
  coordinator: ["contracts", "db", "dispatch", "effects", "engine", "env.ts", "processors", "protocols", "shards"],
  // One call per operation a client asks for, shared by every entry point.
  operations: ["contracts", "db", "effects", "engine", "env.ts", "health", "processors", "schedules", "shards"],
  // What a Worker builds edgeq with: createEdgeq wires the app, the tick and the Durable Object classes.
  // Its `prepareEnqueue` is an operation (src/operations/batch-enqueue.ts) bound to the Worker's processors.
  app: ["contracts", "coordinator", "cron", "env.ts", "events", "http", "operations", "processors", "rpc", "schedules"],
  // The Workers RPC binding: each method one operation of src/operations/api/, as the HTTP routes are.
  rpc: ["contracts", "env.ts", "operations", "processors"],
  // The typed HTTP client (edgeq/client): fetch only, types from the wire's schemas.
  client: ["contracts"],
  // The Node worker runtime (edgeq/node), on the client; processors/errors.ts gives it the same
  // PermanentError and RetryAfterError classes a processor throws.
  node: ["client", "contracts", "processors"],
  // Entry points.
  cron: ["contracts", "db", "effects", "engine", "env.ts", "events", "health", "schedules", "shards"],
  sqs: ["contracts", "db", "effects", "engine", "env.ts", "operations", "processors", "shards"],
  // The page and its browser code, which takes wire types (and two import-free constant modules).
  dashboard: ["contracts", "health"],
  http: [
    "contracts",
    // `npm start`'s cron tick behind the token (src/http/routes/local-tick.ts).
    "cron",
    "dashboard",
    "db",
    "effects",
    "env.ts",
    "events",
    "health",
    "metrics",
    "operations",
    "processors",
    "schedules",
    "shards",
    "sqs",
    "storage",
  ],
};

const escapeDots = (name) => name.replace(/\./g, "\\.");
const folderPath = (name) => (name.endsWith(".ts") ? `^src/${escapeDots(name)}$` : `^src/${name}/`);

const layerRules = Object.entries(ALLOWED).map(([folder, allowed]) => ({
  name: `layer-${folder.replace(/\.ts$/, "")}`,
  comment: `src/${folder} may import only: ${allowed.length > 0 ? allowed.join(", ") : "nothing else of src/"}`,
  severity: "error",
  from: { path: folderPath(folder) },
  to: { path: "^src/", pathNot: [folderPath(folder), ...allowed.map(folderPath)] },
}));

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "No import loops, between files or through type-only imports.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    ...layerRules,
    {
      name: "unknown-folder",
      comment: "Every folder of src/ has a line in ALLOWED (.dependency-cruiser.cjs) and in docs/architecture.md.",
      severity: "error",
      from: { path: "^src/", pathNot: [...Object.keys(ALLOWED).map(folderPath), "^src/index\\.ts$"] },
      to: {},
    },
    {
      name: "engine-through-its-port",
      comment:
        "Outside src/engine, the task store is reached through its port only: the TaskStore interface and the domain types it re-exports (src/engine/store*.ts, types only). Every engine function, SQL fragment and row stays behind it, so a second store changes src/engine alone.",
      severity: "error",
      from: { path: "^src/", pathNot: ["^src/engine/"] },
      to: {
        path: "^src/engine/",
        pathNot: [
          "^src/engine/store[a-z-]*\\.ts$",
          "^src/engine/d1-store\\.ts$",
          "^src/engine/hybrid/hybrid-store\\.ts$",
        ],
      },
    },
    {
      name: "stores-built-by-shard-set",
      comment:
        "A task store is made in one place: src/shards/shard-set.ts (`taskStoreOn`, `Shard.store`); everyone else takes the store it is handed.",
      severity: "error",
      from: { path: "^src/", pathNot: ["^src/engine/", "^src/shards/shard-set\\.ts$"] },
      to: { path: "^src/engine/(d1-store|hybrid/hybrid-store)\\.ts$" },
    },
    {
      name: "durable-object-classes-at-the-entry",
      comment:
        "A Durable Object class is built by createEdgeq and exported by the Worker's entry; everyone else reaches it by its binding.",
      severity: "error",
      from: { path: "^src/", pathNot: ["^src/index\\.ts$", "^src/app/create-edgeq\\.ts$"] },
      to: { path: "^src/(coordinator/coordinator|events/event-hub|schedules/scheduler)\\.ts$" },
    },
    {
      name: "entry-points-hand-changes-to-the-owner",
      comment:
        "HTTP, SQS, RPC, the dashboard, push dispatch, schedules and the cron tick report state changes (through src/operations or as a Change); they never wake a coordinator, publish an event or arm the schedules' alarm themselves.",
      severity: "error",
      from: { path: "^src/(http|sqs|dashboard|rpc|dispatch|schedules|cron)/" },
      to: { path: "^src/effects/(wake|publish-batcher)\\.ts$" },
    },
    {
      name: "reference-deployment-uses-the-package",
      comment:
        "src/index.ts is built only on what the package exports (package.json exports): edgeq, edgeq/dashboard, edgeq/sqs, edgeq/reference and edgeq/plugins/*, as a user's Worker is.",
      severity: "error",
      from: { path: "^src/index\\.ts$" },
      to: {
        pathNot: [
          "^src/app/index\\.ts$",
          "^src/http/parts/(dashboard|sqs|reference)\\.ts$",
          "^src/plugins/(echo|reference)\\.ts$",
          "^src/plugins/[^/]+/index\\.ts$",
        ],
      },
    },
    {
      name: "cli-speaks-the-wire",
      comment:
        "The CLI talks to edgeq over HTTP: it may use the wire contracts, the app's type, the tts plugin's payload, the client and the Node worker runtime.",
      severity: "error",
      from: { path: "^cli/" },
      to: {
        path: "^src/",
        pathNot: ["^src/contracts/", "^src/http/app\\.ts$", "^src/plugins/tts/", "^src/client/", "^src/node/"],
      },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
    // Type-only imports count: a loop through types is still a loop for a reader.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
