import { createServer as createHttpServer, request, type Server } from "node:http";
import { createServer } from "node:net";
import { afterEach, describe, expect, inject, it } from "vitest";
import { EXIT } from "../../cli/errors";
import { counts, edgeq, tempFile, uniqueQueue } from "./commands-support";

/** A port nothing listens on: bound, then released. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

describe("errors and exit codes", () => {
  it("an unreachable server is exit 3, naming the URL", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    for (const args of [["status"], ["enqueue", "q", "{}"], ["list", "q", "--url", url]]) {
      const run = await edgeq(args, { env: { EDGEQ_URL: url } });
      expect(run.code, args.join(" ")).toBe(EXIT.unreachable);
      expect(run.stderr).toContain(`cannot reach ${url}`);
    }
  });

  it("a wrong token is exit 4", async () => {
    const run = await edgeq(["status"], { env: { EDGEQ_TOKEN: "not-the-token" } });
    expect(run.code).toBe(EXIT.auth);
    expect(run.stderr).toMatch(/^edgeq: unauthorized: /);
    const flag = await edgeq(["list", "q", "--token", "nope"]);
    expect(flag.code).toBe(EXIT.auth);
  });

  // Issue 8.12: the 401 did not say which token was sent.
  it("a 401 says where the token came from: flag, environment, config file or the development default", async () => {
    const file = tempFile("config.json", JSON.stringify({ token: "from-file" }));
    // The test server's token is none of these; without EDGEQ_TOKEN the file, then the default, applies.
    const cases: Array<[string[], { env?: Record<string, string>; unset?: string[] }, string]> = [
      [["status", "--token", "nope"], {}, "the --token flag"],
      [["status"], { env: { EDGEQ_TOKEN: "nope" } }, "EDGEQ_TOKEN"],
      [["status"], { env: { EDGEQ_CONFIG: file }, unset: ["EDGEQ_TOKEN"] }, `the config file ${file}`],
      [["status"], { unset: ["EDGEQ_TOKEN"] }, "the development default edgeq-dev-token"],
    ];
    for (const [args, options, source] of cases) {
      const run = await edgeq(args, options);
      expect(run.code, source).toBe(EXIT.auth);
      expect(run.stderr, source).toMatch(/^edgeq: unauthorized: .+ \(the token sent came from /);
      expect(run.stderr, source).toContain(`(the token sent came from ${source}`);
    }
  });

  it("unknown commands, unknown flags and missing arguments are exit 2", async () => {
    for (const args of [
      ["frobnicate"],
      ["dlq"],
      ["dlq", "drop", "q"],
      ["config", "q"],
      ["list", "q", "--colour", "red"],
      ["status", "--json", "--limit", "3"],
      ["list"],
      ["retry"],
      ["watch"],
      ["show", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "extra"],
      [],
    ]) {
      const run = await edgeq(args);
      expect(run.code, args.join(" ")).toBe(EXIT.usage);
      if (args.length > 0) expect(run.stderr, args.join(" ")).toMatch(/^edgeq: /);
    }
  });

  it("every command has --help, exit 0", async () => {
    const help = await edgeq(["--help"]);
    expect(help.code).toBe(EXIT.ok);
    for (const name of ["enqueue", "list", "show", "status", "watch", "cancel", "retry", "purge"]) {
      expect(help.stdout).toContain(`  ${name} `);
      const run = await edgeq([name, "--help"]);
      expect(run.code, name).toBe(EXIT.ok);
      expect(run.stdout).toContain(`usage: edgeq ${name}`);
    }
    expect((await edgeq(["dlq", "redrive", "--help"])).stdout).toContain("usage: edgeq dlq redrive <queue>");
    expect((await edgeq(["config", "set", "--help"])).stdout).toContain("usage: edgeq config set <queue> key=value");
  });
});

describe("enqueue through a flaky connection", () => {
  let proxy: Server | undefined;
  afterEach(() => proxy?.close());

  it("re-sends a chunk whose response was lost without creating its tasks twice", async () => {
    // A proxy that forwards everything, but answers the second enqueue request with a 503 after the server
    // has accepted it: the response is lost, the tasks exist.
    const target = new URL(inject("edgeqUrl"));
    let enqueues = 0;
    proxy = createHttpServer((req, res) => {
      const isEnqueue = req.method === "POST" && /\/tasks$/.test(req.url ?? "");
      if (isEnqueue) enqueues += 1;
      const lose = isEnqueue && enqueues === 2;
      const upstream = request(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
        (up) => {
          if (lose) {
            up.resume();
            up.on("end", () => res.writeHead(503, { "Content-Type": "text/plain" }).end("lost"));
            return;
          }
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy!.listen(0, "127.0.0.1", resolve));
    const address = proxy.address();
    const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;

    const queue = uniqueQueue();
    const lines = Array.from({ length: 1200 }, (_, i) => JSON.stringify({ payload: { n: i } }));
    const file = tempFile("flaky.jsonl", lines.join("\n"));
    const run = await edgeq(["enqueue", queue, "--file", file], { env: { EDGEQ_URL: url } });
    expect(run.stderr).toContain("1200 created, 0 deduplicated");
    expect(run.code).toBe(EXIT.ok);
    expect(enqueues).toBe(4); // 500 + 500 (lost, then re-sent) + 200
    expect(new Set(run.stdout.trim().split("\n")).size).toBe(1200);
    expect(await counts(queue)).toMatchObject({ pending: 1200 });
  });
});
