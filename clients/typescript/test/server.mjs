// The real local server (`agentmem serve`) for the tests: one per test file, on a free port and a fresh
// SQLite file, stopped when the file's tests end. The Python comes from AGENTMEM_PYTHON (the pytest
// wrapper sets it to its own interpreter), else from the repository's .venv.
import { spawn, execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const PACKAGE = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const REPO = resolve(PACKAGE, "../..");
export const PYTHON = process.env.AGENTMEM_PYTHON || join(REPO, ".venv/bin/python");

/** The environment of a server and of the CLI: none of the caller's MEMORY_* settings, the fast embedder. */
function environment(extra = {}) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("MEMORY_")));
  return { ...env, PYTHONUNBUFFERED: "1", MEMORY_EMBEDDER: "hashing", MEMORY_DELETION_DRAIN_SECONDS: "0", ...extra };
}

export function freePort() {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once("error", fail);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => done(port));
    });
  });
}

/** Start `agentmem serve` (extra CLI `args`, e.g. ["--auth", "required"], and MEMORY_* settings in `env`) and wait for /v1/health. */
export async function startServer({ args = [], env = {}, timeoutMs = 30_000 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "agentmem-ts-"));
  const db = join(dir, "memory.db");
  const port = await freePort();
  const command = ["-m", "agentmem.cli", "serve", "--host", "127.0.0.1", "--port", String(port), "--db", db, "--workers", "1", ...args];
  const child = spawn(PYTHON, command, { cwd: REPO, env: environment(env), stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const exited = new Promise((done) => child.once("exit", done));
  const stopOnExit = () => child.kill("SIGKILL");
  process.once("exit", stopOnExit);
  const url = `http://127.0.0.1:${port}`;
  const server = {
    url,
    db,
    async stop() {
      process.off("exit", stopOnExit);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
    /** The `agentmem` command line on this server's database, e.g. `cli("keys", "create", "--app", "A")`. */
    async cli(...words) {
      const run = promisify(execFile);
      const { stdout } = await run(PYTHON, ["-m", "agentmem.cli", ...words, "--db", db], {
        cwd: REPO,
        env: environment({ MEMORY_STORE: "sqlite" }),
      });
      return stdout;
    },
  };
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    try {
      if ((await fetch(`${url}/v1/health`)).status < 500) return server;
    } catch {
      await new Promise((wait) => setTimeout(wait, 50));
    }
  }
  await server.stop();
  throw new Error(`the local server (${PYTHON}) did not start: ${stderr}`);
}
