// BullMQ's side of one figure of `python -m bench`, against the same redis-server.
// Usage: node bench.mjs PORT JOBS FIGURE   (FIGURE: add-one | add-bulk | process-1 | process-16 | fill | drain)
// Prints one JSON object: {"what", "value", "unit", "note"}. The harness calls it once per round, so
// BullMQ's rounds interleave with EchoMQ's and a drift of the machine's speed lands on both sides.
import { Queue, Worker } from 'bullmq';

const port = Number(process.argv[2]);
const jobs = Number(process.argv[3]);
const which = process.argv[4];
const connection = { host: '127.0.0.1', port };
const CHUNK = 1000;

function figure(what, value, unit, note) {
  console.log(JSON.stringify({ what, value, unit, note }));
}

function seconds(start) {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

function payloads(from, to) {
  const batch = [];
  for (let n = from; n < to; n++) batch.push({ name: 'job', data: { to: 'user@example.com', n } });
  return batch;
}

async function addBulk(queue, count) {
  for (let i = 0; i < count; i += CHUNK) await queue.addBulk(payloads(i, Math.min(count, i + CHUNK)));
}

async function addOne() {
  const queue = new Queue('bench-add-one', { connection });
  await queue.waitUntilReady();
  const start = process.hrtime.bigint();
  for (let n = 0; n < jobs; n++) await queue.add('job', { to: 'user@example.com', n });
  figure('add, one by one (Queue.add)', jobs / seconds(start), 'jobs/s', `${jobs} jobs`);
  await queue.close();
}

async function addInBulk() {
  const queue = new Queue('bench-add-bulk', { connection });
  await queue.waitUntilReady();
  const start = process.hrtime.bigint();
  await addBulk(queue, jobs);
  figure(`add in bulk (Queue.addBulk, chunks of ${CHUNK})`, jobs / seconds(start), 'jobs/s', `${jobs} jobs`);
  await queue.close();
}

async function processAll(concurrency) {
  const name = `bench-process-${concurrency}`;
  const queue = new Queue(name, { connection });
  await addBulk(queue, jobs);
  let done = 0;
  let worker;
  const start = process.hrtime.bigint();
  await new Promise((resolve, reject) => {
    worker = new Worker(name, async () => {}, { connection, concurrency });
    worker.on('completed', () => { if (++done === jobs) resolve(); });
    worker.on('failed', (job, error) => reject(error));
  });
  figure(`process (no-op async processor), concurrency ${concurrency}`, jobs / seconds(start), 'jobs/s',
         `${jobs} jobs, Worker`);
  await worker.close();
  const counts = await queue.getJobCounts('completed');
  if (counts.completed !== jobs) throw new Error(`${name}: ${counts.completed} of ${jobs} completed`);
  await queue.obliterate({ force: true });
  await queue.close();
}

// The per-job cost figures (bench/per_job_cost.py): the harness reads INFO and memory between them.
async function fill() {
  const queue = new Queue('bench-cost', { connection });
  await queue.waitUntilReady();
  await addBulk(queue, jobs);
  figure('fill (Queue.addBulk)', jobs, 'jobs', 'left pending');
  await queue.close();
}

async function drain() {
  let done = 0;
  let worker;
  await new Promise((resolve, reject) => {
    worker = new Worker('bench-cost', async () => {}, { connection, concurrency: 1 });
    worker.on('completed', () => { if (++done === jobs) resolve(); });
    worker.on('failed', (job, error) => reject(error));
  });
  await worker.close();
  figure('drain (Worker, concurrency 1)', done, 'jobs', 'left completed');
}

const figures = {
  'fill': fill,
  'drain': drain,
  'add-one': addOne,
  'add-bulk': addInBulk,
  'process-1': () => processAll(1),
  'process-16': () => processAll(16),
};
if (!figures[which]) {
  console.error(`unknown figure ${which}: one of ${Object.keys(figures).join(', ')}`);
  process.exit(2);
}
await figures[which]();
