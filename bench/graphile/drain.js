#!/usr/bin/env node
// graphile-worker peer of pgq's bench (../main.go runs it; see ../README.md).
//
//   node drain.js setup  --url URL                      run graphile-worker's migrations
//   node drain.js insert --url URL --jobs N --batch B   queue N no-op jobs, B per addJobs call
//   node drain.js drain  --url URL --jobs N --concurrency C --pool P --local-queue S --batch-delay D
//                                                       work the queue off with runOnce
//
// Each mode prints one JSON line on stdout. drain uses graphile-worker's batched mode:
// preset.worker.localQueue.size = S and completeJobBatchDelay = failJobBatchDelay = D
// (ms; -1 turns batching off). Its time runs from the runOnce call to its return, when
// the queue is empty and the batched completions are flushed. It exits non-zero unless
// every job ran exactly once, on its first attempt.
"use strict";

const { performance } = require("node:perf_hooks");
const {
  Logger,
  makeWorkerUtils,
  runMigrations,
  runOnce,
} = require("graphile-worker");

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
      throw new Error(`bad argument ${argv[i]}`);
    }
    args[argv[i].slice(2)] = argv[i + 1];
  }
  return args;
}

function int(args, name) {
  const v = Number.parseInt(args[name], 10);
  if (!Number.isFinite(v)) {
    throw new Error(`--${name} must be an integer`);
  }
  return v;
}

// Warnings and errors go to stderr and are counted; the rest is dropped.
const warnings = [];
const logger = new Logger(() => (level, message) => {
  if (level === "warning" || level === "error") {
    warnings.push(`${level}: ${message}`);
    process.stderr.write(`graphile-worker ${level}: ${message}\n`);
  }
});

async function main() {
  const mode = process.argv[2];
  const args = parseArgs(process.argv.slice(3));
  const connectionString = args.url;
  if (!connectionString) {
    throw new Error("--url is required");
  }
  const version = require("graphile-worker/package.json").version;

  switch (mode) {
    case "setup": {
      await runMigrations({ connectionString, logger });
      console.log(JSON.stringify({ version, node: process.version }));
      return;
    }
    case "insert": {
      const jobs = int(args, "jobs");
      const batch = int(args, "batch");
      const utils = await makeWorkerUtils({ connectionString, logger });
      try {
        const t0 = performance.now();
        for (let done = 0; done < jobs; done += batch) {
          const n = Math.min(batch, jobs - done);
          const specs = new Array(n);
          for (let i = 0; i < n; i++) {
            specs[i] = { identifier: "noop", payload: {} };
          }
          const added = await utils.addJobs(specs);
          if (added.length !== n) {
            throw new Error(`addJobs added ${added.length} of ${n} jobs`);
          }
        }
        const ms = performance.now() - t0;
        console.log(JSON.stringify({ insert_ms: ms, warnings: warnings.length }));
      } finally {
        await utils.release();
      }
      return;
    }
    case "drain": {
      const jobs = int(args, "jobs");
      const concurrency = int(args, "concurrency");
      const maxPoolSize = int(args, "pool");
      const localQueueSize = int(args, "local-queue");
      const batchDelay = int(args, "batch-delay");
      let calls = 0;
      let notFirstAttempt = 0;
      let duplicates = 0;
      const seen = new Set();
      const taskList = {
        noop: async (_payload, helpers) => {
          calls++;
          const id = helpers.job.id;
          if (seen.has(id)) {
            duplicates++;
          } else {
            seen.add(id);
          }
          if (helpers.job.attempts !== 1) {
            notFirstAttempt++;
          }
        },
      };
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await runOnce({
        connectionString,
        concurrency,
        maxPoolSize,
        logger,
        noHandleSignals: true,
        taskList,
        preset: {
          worker: {
            localQueue: { size: localQueueSize },
            completeJobBatchDelay: batchDelay,
            failJobBatchDelay: batchDelay,
          },
        },
      });
      const ms = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      const result = {
        drain_ms: ms,
        cpu_ms: (cpu.user + cpu.system) / 1000,
        calls,
        distinct: seen.size,
        duplicates,
        not_first_attempt: notFirstAttempt,
        warnings: warnings.length,
        first_warnings: warnings.slice(0, 3),
      };
      console.log(JSON.stringify(result));
      if (calls !== jobs || seen.size !== jobs || duplicates !== 0 || notFirstAttempt !== 0) {
        process.exitCode = 2;
      }
      return;
    }
    default:
      throw new Error(`unknown mode ${mode} (setup, insert or drain)`);
  }
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
