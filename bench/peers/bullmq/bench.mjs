// BullMQ's figures for `python -m bench peers`, against the same redis-server.
// Usage: node bench.mjs PORT JOBS
// Prints one JSON object per line: {"what", "value", "unit", "note"}.
import { Queue, Worker } from 'bullmq';

const port = Number(process.argv[2]);
const jobs = Number(process.argv[3]);
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

async function measureAdd() {
  const one = new Queue('bench-add-one', { connection });
  const count = Math.min(jobs, 20000);
  let start = process.hrtime.bigint();
  for (let n = 0; n < count; n++) await one.add('job', { to: 'user@example.com', n });
  figure('add, one by one (Queue.add)', count / seconds(start), 'jobs/s', `${count} jobs`);
  await one.close();

  const bulk = new Queue('bench-add-bulk', { connection });
  start = process.hrtime.bigint();
  await addBulk(bulk, jobs);
  figure(`add in bulk (Queue.addBulk, chunks of ${CHUNK})`, jobs / seconds(start), 'jobs/s', `${jobs} jobs`);
  await bulk.close();
}

async function measureProcessing(concurrency) {
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
  await queue.close();
}

await measureAdd();
await measureProcessing(1);
await measureProcessing(16);
