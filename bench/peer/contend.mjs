// Contention benchmark of node-redlock (npm package `redlock` 5, over ioredis 5):
// N processes take turns on one key across the given Redis nodes, so that the
// C++ benchmark can run it on the same servers between its own runs and compare.
//
// The parent forks the children, waits until every child is connected, starts
// them, lets them warm up, measures a window of --duration seconds, stops them
// and collects what they recorded. Children keep their timestamps in memory and
// send them once at the end, so that no reporting traffic disturbs the run.
//
// Output: one human line, then one `RESULT {json}` line on stdout.
// Exit status: 0 when it ran (errors and violations are in the JSON), 2 on bad
// arguments, 1 when it could not run.

import { fork } from "node:child_process";
import { readFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Redis from "ioredis";
import Redlock, { ExecutionError } from "redlock";

const SELF = fileURLToPath(import.meta.url);
const CHILD_ENV = "REDLOCK_PEER_CONTEND_CHILD";

// node-redlock's own defaults, unchanged: retryCount 10, retryDelay 200 ms,
// retryJitter 100 ms, driftFactor 0.01. retryCount stays at 10 although a waiter
// may well wait longer than the ~2.2 s that 11 attempts span, because unlimited
// retries (-1) measured worse, not better: an attempt that fails keeps the keys it
// set on a minority of nodes (and its own retries fail on them too, the acquire
// script checks only that the key exists), so a split vote blocks every process.
// With 10 retries the loser gives up after ~2.2 s and its acquire clears that
// partial state; with -1 it never gives up and the keys stay until they expire.
// Failed acquires are counted as errors and the loop goes on.
const REDLOCK_SETTINGS = {};

// How long a stopping child waits for its current iteration (a hold, or an
// acquire that is still retrying) before it reports without it.
function stopGraceMs(holdMs) {
  return holdMs + 1000;
}

function hrnow() {
  return process.hrtime.bigint();
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Resolves once the message is handed to the IPC channel, so that the child
// may exit right after without losing it.
function sendToParent(message) {
  return new Promise((resolve) => process.send(message, () => resolve()));
}

// ---------------------------------------------------------------- arguments

class UsageError extends Error {}

const USAGE =
  "usage: contend.mjs --nodes redis://HOST:PORT[,redis://HOST:PORT...] --processes N " +
  "--hold-ms H --duration S --warmup S --key K [--expiry-ms MS]";

function parseNodes(text) {
  const nodes = text.split(",").map((s) => s.trim());
  if (nodes.length === 0 || nodes.some((s) => s === "")) {
    throw new UsageError(`bad argument --nodes: empty entry in '${text}'`);
  }
  for (const node of nodes) {
    let url;
    try {
      url = new URL(node);
    } catch {
      throw new UsageError(`bad argument --nodes: '${node}' is not a URL (want redis://HOST:PORT)`);
    }
    if (url.protocol !== "redis:" || url.hostname === "" || url.port === "") {
      throw new UsageError(`bad argument --nodes: '${node}' is not redis://HOST:PORT`);
    }
  }
  if (new Set(nodes).size !== nodes.length) {
    throw new UsageError(`bad argument --nodes: a node is listed twice in '${text}'`);
  }
  return nodes;
}

function parseNumber(name, text, { integer, min, minExclusive }) {
  const value = Number(text);
  const ok =
    text.trim() !== "" &&
    Number.isFinite(value) &&
    (!integer || Number.isInteger(value)) &&
    (minExclusive ? value > min : value >= min);
  if (!ok) {
    const what = integer ? "an integer" : "a number";
    const bound = minExclusive ? `> ${min}` : `>= ${min}`;
    throw new UsageError(`bad argument --${name}: expected ${what} ${bound}, got '${text}'`);
  }
  return value;
}

function parseArgs(argv) {
  const raw = new Map();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--help" || arg === "-h") {
      throw new UsageError("");
    }
    if (!arg.startsWith("--")) {
      throw new UsageError(`bad argument '${arg}': expected an option --NAME`);
    }
    let name;
    let value;
    const eq = arg.indexOf("=");
    if (eq >= 0) {
      name = arg.slice(2, eq);
      value = arg.slice(eq + 1);
    } else {
      name = arg.slice(2);
      if (i + 1 >= argv.length) {
        throw new UsageError(`bad argument --${name}: missing value`);
      }
      value = argv[++i];
    }
    if (raw.has(name)) {
      throw new UsageError(`bad argument --${name}: given twice`);
    }
    raw.set(name, value);
  }
  const known = ["nodes", "processes", "hold-ms", "duration", "warmup", "key", "expiry-ms"];
  for (const name of raw.keys()) {
    if (!known.includes(name)) {
      throw new UsageError(`bad argument --${name}: unknown option`);
    }
  }
  for (const name of known) {
    if (name !== "expiry-ms" && !raw.has(name)) {
      throw new UsageError(`bad argument --${name}: required`);
    }
  }
  const options = {
    nodes: parseNodes(raw.get("nodes")),
    processes: parseNumber("processes", raw.get("processes"), { integer: true, min: 1 }),
    holdMs: parseNumber("hold-ms", raw.get("hold-ms"), { min: 0 }),
    duration: parseNumber("duration", raw.get("duration"), { min: 0, minExclusive: true }),
    warmup: parseNumber("warmup", raw.get("warmup"), { min: 0 }),
    key: raw.get("key"),
    // node-redlock requires an integral duration in milliseconds.
    expiryMs: raw.has("expiry-ms")
      ? parseNumber("expiry-ms", raw.get("expiry-ms"), { integer: true, min: 1 })
      : 8000,
  };
  if (options.key === "") {
    throw new UsageError("bad argument --key: empty");
  }
  return options;
}

// ---------------------------------------------------------------- redis helpers

// A client for the parent's own checks: one connection attempt, no reconnects,
// no offline queue, so that an unreachable node fails at once with its name.
function checkClient(node) {
  const client = new Redis(node, {
    lazyConnect: true,
    connectTimeout: 3000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  // connect() rejects with a bare "Connection is closed"; the cause comes here.
  client.lastError = null;
  client.on("error", (error) => {
    client.lastError = error;
  });
  return client;
}

async function connectAll(nodes) {
  const clients = [];
  try {
    for (const node of nodes) {
      const client = checkClient(node);
      clients.push(client);
      try {
        await client.connect();
        await client.ping();
      } catch (error) {
        const cause = client.lastError ?? error;
        throw fail(`cannot connect to node ${node}: ${cause.message}`);
      }
    }
  } catch (error) {
    clients.forEach((c) => c.disconnect());
    throw error;
  }
  return clients;
}

async function deleteKey(clients, nodes, key) {
  const failures = [];
  await Promise.all(
    clients.map((client, i) =>
      client.del(key).catch((error) => failures.push(`${nodes[i]}: ${error.message}`)),
    ),
  );
  return failures;
}

function peerVersion() {
  // The package's "exports" hides its package.json; find it beside the entry point.
  const require = createRequire(import.meta.url);
  let dir = dirname(require.resolve("redlock"));
  for (;;) {
    const candidate = join(dir, "package.json");
    if (existsSync(candidate)) {
      const pkg = JSON.parse(readFileSync(candidate, "utf8"));
      if (pkg.name === "redlock") {
        return pkg.version;
      }
    }
    const parent = dirname(dir);
    if (parent === dir) {
      return "unknown";
    }
    dir = parent;
  }
}

// ---------------------------------------------------------------- child

async function childMain() {
  const config = await new Promise((resolve) => process.once("message", resolve));
  // The parent is gone (killed, crashed): do not outlive it.
  process.on("disconnect", () => process.exit(3));

  const redisErrors = { count: 0 };
  const clients = config.nodes.map((node) => {
    const client = new Redis(node, { lazyConnect: true });
    client.on("error", () => {
      redisErrors.count++;
    });
    return client;
  });
  try {
    await Promise.all(clients.map((c) => c.connect()));
    await Promise.all(clients.map((c) => c.ping()));
  } catch (error) {
    await sendToParent({ type: "failed", message: `child cannot connect: ${error.message}` });
    return;
  }

  const redlock = new Redlock(clients, REDLOCK_SETTINGS);
  const acquired = [];
  const releaseStart = [];
  const attempts = [];
  const errorTimes = [];
  let releaseErrors = 0;
  let stopping = false;

  let onStop;
  const stopped = new Promise((resolve) => {
    onStop = resolve;
  });
  const started = new Promise((resolve) => {
    process.on("message", (msg) => {
      if (msg.type === "start") resolve();
      if (msg.type === "stop") {
        stopping = true;
        onStop();
      }
    });
  });
  process.send({ type: "ready" });
  await started;

  async function loop() {
    while (!stopping) {
      let lock;
      try {
        lock = await redlock.acquire([config.key], config.expiryMs);
      } catch (error) {
        if (!(error instanceof ExecutionError)) throw error;
        errorTimes.push(hrnow());
        continue;
      }
      acquired.push(hrnow());
      attempts.push(lock.attempts.length);
      if (config.holdMs > 0) await sleep(config.holdMs);
      releaseStart.push(hrnow());
      try {
        await lock.release();
      } catch (error) {
        if (!(error instanceof ExecutionError)) throw error;
        releaseErrors++;
      }
    }
  }

  let abandoned = false;
  let loopError = null;
  const running = loop().catch((error) => {
    loopError = error;
  });
  // Wait for the stop message (or a failed loop), then give the current
  // iteration a bounded time.
  await Promise.race([stopped, running]);
  const graceOver = sleep(stopGraceMs(config.holdMs)).then(() => "timeout");
  if ((await Promise.race([running.then(() => "done"), graceOver])) === "timeout") {
    abandoned = true;
  }
  if (loopError) {
    await sendToParent({ type: "failed", message: `child failed: ${loopError.stack ?? loopError}` });
    return;
  }
  // An acquire still under way when the grace ended has no record: its
  // acquisition came after the window. Closing the connections first drops it,
  // so that nothing of this child reaches Redis after the parent deletes the key.
  clients.forEach((c) => c.disconnect());
  const n = releaseStart.length;
  await sendToParent({
    type: "report",
    acquired: BigInt64Array.from(acquired.slice(0, n)),
    releaseStart: BigInt64Array.from(releaseStart),
    attempts: Int32Array.from(attempts.slice(0, n)),
    errorTimes: BigInt64Array.from(errorTimes),
    releaseErrors,
    redisErrors: redisErrors.count,
    abandoned,
  });
}

// ---------------------------------------------------------------- parent

function fail(message) {
  const error = new Error(message);
  error.fatal = true;
  return error;
}

async function parentMain() {
  // A reader that went away (`| head -1`) must not skip the cleanup below.
  process.stdout.on("error", (error) => {
    if (error.code !== "EPIPE") throw error;
  });
  let options;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    if (error.message) process.stderr.write(`contend.mjs: ${error.message}\n`);
    process.stderr.write(`${USAGE}\n`);
    process.exit(error.message ? 2 : 0);
  }

  const children = [];
  // A safety net for every way out, including uncaught errors: kill is a plain
  // system call, so it works inside an "exit" handler.
  process.on("exit", () => {
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  });

  let clients = [];
  let interrupted = null;
  const onSignal = (signal) => {
    if (interrupted) return;
    interrupted = signal;
    process.stderr.write(`contend.mjs: ${signal}: stopping the children and deleting the key\n`);
    for (const child of children) child.kill("SIGKILL");
    deleteKey(clients, options.nodes, options.key).finally(() => {
      clients.forEach((c) => c.disconnect());
      process.exit(signal === "SIGINT" ? 130 : 143);
    });
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  let exitCode = 0;
  try {
    clients = await connectAll(options.nodes);
    // A crashed earlier run may have left the key behind until it expires.
    const stale = await deleteKey(clients, options.nodes, options.key);
    if (stale.length) throw fail(`cannot delete the key: ${stale.join("; ")}`);
    const result = await runChildren(options, children);
    printResult(options, result);
  } catch (error) {
    if (interrupted) return;
    process.stderr.write(`contend.mjs: ${error.fatal ? error.message : error.stack}\n`);
    exitCode = 1;
  } finally {
    if (!interrupted) {
      for (const child of children) {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      }
      const left = await deleteKey(clients, options.nodes, options.key);
      if (left.length) {
        process.stderr.write(`contend.mjs: cannot delete the key: ${left.join("; ")}\n`);
        exitCode = 1;
      }
      clients.forEach((c) => c.disconnect());
    }
  }
  if (!interrupted) process.exit(exitCode);
}

function runChildren(options, children) {
  return new Promise((resolve, reject) => {
    const n = options.processes;
    const reports = new Array(n).fill(null);
    let ready = 0;
    let reported = 0;
    let closed = 0;
    let phase = "starting";
    let readyTimer = null;
    let reportTimer = null;
    let windowStart = 0n;
    let windowEnd = 0n;
    let settled = false;

    const abort = (message) => {
      if (settled) return;
      settled = true;
      clearTimeout(readyTimer);
      clearTimeout(reportTimer);
      reject(fail(message));
    };

    const config = {
      nodes: options.nodes,
      key: options.key,
      holdMs: options.holdMs,
      expiryMs: options.expiryMs,
    };
    for (let i = 0; i < n; i++) {
      const child = fork(SELF, [], {
        env: { ...process.env, [CHILD_ENV]: "1" },
        serialization: "advanced", // carries BigInt64Array
        stdio: ["ignore", "inherit", "inherit", "ipc"],
      });
      children.push(child);
      child.on("error", (error) => abort(`child ${i}: ${error.message}`));
      // "close" comes after the IPC channel closed, so after the last message.
      child.on("close", (code, signal) => {
        if (reports[i] === null) {
          abort(`child ${i} exited (${signal ?? `status ${code}`}) before reporting`);
        } else if (++closed === n && reported === n) {
          finish();
        }
      });
      child.on("message", (msg) => {
        if (msg.type === "ready") {
          if (++ready === n) begin();
        } else if (msg.type === "failed") {
          abort(`child ${i}: ${msg.message}`);
        } else if (msg.type === "report") {
          reports[i] = msg;
          // The key is deleted once every child has exited: wait for both.
          if (++reported === n && closed === n) finish();
        }
      });
      child.send(config);
    }
    // Forking and connecting many node processes on a busy machine is slow.
    readyTimer = setTimeout(
      () => abort(`only ${ready} of ${n} children were ready after 60 s`),
      60000,
    );

    function begin() {
      clearTimeout(readyTimer);
      phase = "warmup";
      for (const child of children) child.send({ type: "start" });
      setTimeout(() => {
        windowStart = hrnow();
        phase = "window";
        setTimeout(() => {
          windowEnd = hrnow();
          phase = "stopping";
          for (const child of children) child.send({ type: "stop" });
          reportTimer = setTimeout(
            () => abort(`only ${reported} of ${n} children reported and ${closed} exited after stop`),
            stopGraceMs(options.holdMs) + 10000,
          );
        }, options.duration * 1000);
      }, options.warmup * 1000);
    }

    function finish() {
      if (settled) return;
      settled = true;
      clearTimeout(reportTimer);
      resolve({ reports, windowStart, windowEnd, phase });
    }
  });
}

function countViolations(reports) {
  // Every recorded interval counts here, warm-up and tail included: more
  // evidence for mutual exclusion, which does not depend on the window.
  const intervals = [];
  for (const r of reports) {
    for (let j = 0; j < r.releaseStart.length; j++) {
      intervals.push([r.acquired[j], r.releaseStart[j]]);
    }
  }
  intervals.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  let violations = 0;
  let maxEnd = -1n;
  for (const [start, end] of intervals) {
    // Half-open intervals: a start equal to the previous end is no overlap.
    if (start < maxEnd) violations++;
    if (end > maxEnd) maxEnd = end;
  }
  return { violations, intervals: intervals.length };
}

function round(x, digits) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function printResult(options, { reports, windowStart, windowEnd }) {
  const inWindow = (t) => t >= windowStart && t < windowEnd;
  const perProcess = [];
  let holdSumNs = 0n;
  let attemptsSum = 0;
  let acquireErrors = 0;
  let releaseErrors = 0;
  let redisErrors = 0;
  let abandoned = 0;
  for (const r of reports) {
    let count = 0;
    for (let j = 0; j < r.acquired.length; j++) {
      if (!inWindow(r.acquired[j])) continue;
      count++;
      holdSumNs += r.releaseStart[j] - r.acquired[j];
      attemptsSum += r.attempts[j];
    }
    perProcess.push(count);
    for (const t of r.errorTimes) if (inWindow(t)) acquireErrors++;
    releaseErrors += r.releaseErrors;
    redisErrors += r.redisErrors;
    if (r.abandoned) abandoned++;
  }
  const { violations, intervals } = countViolations(reports);
  const durationS = Number(windowEnd - windowStart) / 1e9;
  const acquisitions = perProcess.reduce((a, b) => a + b, 0);
  const meanHoldUs = acquisitions ? Number(holdSumNs) / 1e3 / acquisitions : 0;
  const holdCeiling = meanHoldUs > 0 ? 1e6 / meanHoldUs : null;
  const rate = acquisitions / durationS;
  const minCount = Math.min(...perProcess);
  const meanCount = acquisitions / perProcess.length;
  const result = {
    peer: "node-redlock",
    peer_version: peerVersion(),
    processes: options.processes,
    nodes: options.nodes.length,
    hold_ms: options.holdMs,
    expiry_ms: options.expiryMs,
    retry_count: REDLOCK_SETTINGS.retryCount ?? 10,
    duration_s: round(durationS, 4),
    acquisitions,
    acquisitions_per_s: round(rate, 2),
    mean_hold_us: round(meanHoldUs, 1),
    hold_ceiling_per_s: holdCeiling === null ? null : round(holdCeiling, 2),
    vs_hold_ceiling: holdCeiling === null ? null : round(rate / holdCeiling, 4),
    mean_attempts: acquisitions ? round(attemptsSum / acquisitions, 3) : null,
    per_process: perProcess,
    per_process_min: minCount,
    per_process_min_vs_mean: meanCount > 0 ? round(minCount / meanCount, 4) : null,
    acquire_errors: acquireErrors,
    release_errors: releaseErrors,
    redis_errors: redisErrors,
    violations,
    intervals_checked: intervals,
    children_cut_at_stop: abandoned,
  };
  const ceilingText =
    holdCeiling === null ? "no hold ceiling" : `${round(rate / holdCeiling, 3)} of the hold ceiling ${round(holdCeiling, 1)}/s`;
  process.stdout.write(
    `node-redlock ${result.peer_version}: ${options.processes} processes on ${options.nodes.length} nodes, ` +
      `hold ${options.holdMs} ms, ${round(durationS, 2)} s: ${acquisitions} acquisitions ` +
      `(${round(rate, 1)}/s, ${ceilingText}), ` +
      `min process ${minCount} (${result.per_process_min_vs_mean ?? "-"} of mean), ` +
      `${acquireErrors} acquire errors, ${violations} violations in ${intervals} intervals\n`,
  );
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

if (process.env[CHILD_ENV] === "1" && process.send) {
  childMain().then(
    () => process.exit(0),
    (error) => {
      process.stderr.write(`contend.mjs child: ${error.stack ?? error}\n`);
      process.exit(1);
    },
  );
} else {
  await parentMain();
}
