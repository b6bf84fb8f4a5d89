// A second EchoMQ runtime written from PROTOCOL.md alone (it shares no code with queues/): it expands
// the scripts' includes, speaks RESP over node's net module, and runs enqueue, claim, extend,
// complete, complete_many, fail, release and recover_expired on one queue beside the Python worker
// (its RESP transport is tests/support/resp.js),
// checking every reply's shape and element types as the protocol states them.
//
// usage: node conformance_client.js PORT LUA_DIR
// It prints one JSON line {"shas": {...}} and then, for each line "go PHASE" read on stdin (prepare,
// stale, verify), one JSON line {"phase", "failures": [...], ...}; an empty failures list means every
// check of that phase held.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const { connect } = require('../support/resp');

const [port, luaDir] = process.argv.slice(2);
const Q = 'conform';
const ACTOR = `node:${process.pid}`;

// Section 4: a line that is exactly --@include NAME.lua is replaced by that file without its
// trailing newlines; the line's own newline stays.
function expand(name) {
  const text = fs.readFileSync(path.join(luaDir, name), 'utf8');
  return text.replace(/^--@include ([\w.]+)$/gm, (_, inc) => expand(inc).replace(/\n+$/, ''));
}
const SCRIPTS = {};
for (const name of ['enqueue', 'claim', 'extend', 'complete', 'complete_many', 'fail', 'release',
  'recover_expired', 'stats', 'page', 'job', 'history']) {
  const source = expand(`${name}.lua`);
  SCRIPTS[name] = { source, sha: crypto.createHash('sha1').update(source, 'utf8').digest('hex') };
}

let redis;
const failures = [];
function check(ok, what, seen) {
  if (!ok) failures.push(`${what}: got ${JSON.stringify(seen, (k, v) => (v instanceof Error ? `ERROR ${v.message}` : v))}`);
  return ok;
}
const isDigits = (v) => typeof v === 'string' && /^[0-9]{1,14}$/.test(v);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Section 4: the six KEYS, the sixth the job key or the prefix.
function keys(queue, jobId) {
  const prefix = `emq:{${queue}}:`;
  return ['pending', 'active', 'done', 'failed', 'events'].map((k) => prefix + k)
    .concat([jobId === undefined ? prefix : `${prefix}job:${jobId}`]);
}

// EVALSHA first; EVAL on NOSCRIPT (it did not run, so sending it again is safe).
async function call(name, ks, argv) {
  const { sha, source } = SCRIPTS[name];
  let reply = await redis.send(['EVALSHA', sha, ks.length, ...ks, ...argv]);
  if (reply instanceof Error && reply.message.startsWith('NOSCRIPT')) {
    reply = await redis.send(['EVAL', source, ks.length, ...ks, ...argv]);
  }
  return reply;
}

const registered = new Set();
async function enqueue(queue, id, payload, delayMs = 0, maxAttempts = 3) {
  const reply = await call('enqueue', keys(queue, id), [id, payload, delayMs, maxAttempts, ACTOR]);
  if (!registered.has(queue)) { await redis.send(['SADD', 'emq:queues', queue]); registered.add(queue); }
  return reply;
}

function claimId() { return crypto.randomBytes(8).toString('hex'); }

// claim's OK reply: deadline, then id, attempts, payload per job (all bulk strings).
async function claim(queue, leaseMs, count) {
  const cid = claimId();
  const reply = await call('claim', keys(queue), [leaseMs, cid, ACTOR, count]);
  if (!Array.isArray(reply) || reply[0] !== 'OK') return { reply, jobs: [] };
  check(isDigits(reply[1]), 'claim deadline is a bulk string of digits', reply[1]);
  const jobs = [];
  for (let i = 2; i < reply.length; i += 3) {
    check(isDigits(reply[i + 1]), 'claim attempts is a bulk string of digits', reply[i + 1]);
    jobs.push({ id: reply[i], attempts: reply[i + 1], claimId: cid, payload: reply[i + 2], deadline: Number(reply[1]) });
  }
  return { reply, jobs };
}

// Section 9: entries split by \n; each CODE DT ['.' ATTEMPTS] [\t ACTOR [\t ERROR]], DT counted from the
// first entry's time, an attempts or actor left out being the entry before's (attempts plus one on a claim);
// %XX undone; from = previous to;
// a fail entry without an error has the next fail entry's, the newest such the job's last_error.
// CODE names the move and the state it went to, as move_row in moves.lua lists them.
const CODES = {};
{
  const rows = fs.readFileSync(path.join(luaDir, 'moves.lua'), 'utf8')
    .matchAll(/^ {2}if move == '(\w+)' and to == '(\w*)' then return '(\w)',/gm);
  for (const [, move, to, code] of rows) CODES[code] = [move, to];
}
function parseHistory(text, lastError) {
  const unescape = (s) => Buffer.from(s.replace(/%([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16))), 'latin1').toString('utf8');
  const entries = [];
  let base = null;
  let from = '';
  let attempts = '0';
  let actor = '';
  for (const line of text ? text.split('\n') : []) {
    const m = /^([A-Za-z])(-?[0-9]+)(?:\.([^\t]*))?(?:\t([^\t]*)(?:\t([\s\S]*))?)?$/.exec(line);
    if (!m || !CODES[m[1]]) { entries.push({ move: '?', raw: line }); continue; }
    const [move, to] = CODES[m[1]];
    const ts = base === null ? Number(m[2]) : base + Number(m[2]);
    if (base === null) base = ts;
    if (m[3] !== undefined) attempts = unescape(m[3]);
    else if (m[1] === 'c' && /^-?[0-9]{1,14}$/.test(attempts)) attempts = String(Number(attempts) + 1);
    if (m[4] !== undefined) actor = unescape(m[4]);
    const entry = { ts, move, from: move === 'enqueue' ? '' : from, to, attempts, actor };
    if (m[5] !== undefined) entry.error = unescape(m[5]);
    entries.push(entry);
    from = to;
  }
  let carried = lastError;
  for (let i = entries.length - 1; i >= 0; i -= 1) {
    if (entries[i].move !== 'fail') continue;
    if (entries[i].error === undefined) entries[i].error = carried;
    else carried = entries[i].error;
  }
  return entries;
}

async function history(queue, id) {
  const reply = await call('history', keys(queue, id), [id]);
  check(Array.isArray(reply) && typeof reply[0] === 'number' && typeof reply[1] === 'string'
    && typeof reply[2] === 'number' && typeof reply[3] === 'string' && typeof reply[4] === 'string',
  'history reply types', reply);
  return parseHistory(reply[3], reply[4]);
}

const state = {};

async function prepare() {
  // Checklist 4: a bad integer is an error naming the argument, and nothing moves.
  const bad = await call('claim', keys(Q), ['1e3', claimId(), ACTOR, 1]);
  check(bad instanceof Error && bad.message.startsWith('ERR emq: lease_ms'), 'lease_ms 1e3 is refused', bad);
  const bad2 = await call('claim', keys(Q), [1000, 'NOT-HEX', ACTOR, 1]);
  check(bad2 instanceof Error && bad2.message.startsWith('ERR emq: claim_id'), 'an upper-case claim id is refused', bad2);

  // Checklist 7: EMPTY with the next claimable due time and the server's now.
  const empty = await call('claim', keys(`${Q}-idle`), [1000, claimId(), ACTOR, 1]);
  check(Array.isArray(empty) && empty[0] === 'EMPTY' && empty[1] === '' && isDigits(empty[2]), 'EMPTY on an empty queue', empty);
  const later = await enqueue(`${Q}-idle`, 'later', '{}', 60000);
  const waiting = await call('claim', keys(`${Q}-idle`), [1000, claimId(), ACTOR, 1]);
  check(waiting[0] === 'EMPTY' && waiting[1] === later[1] && Number(waiting[1]) - Number(waiting[2]) > 50000,
    'EMPTY names the delayed job\'s due time beside now', [later, waiting]);

  // Checklist 5: enqueue, and a second enqueue of the same id is DUPLICATE.
  const first = await enqueue(Q, 'g', '{"do":"ok"}', 0, 1);
  check(Array.isArray(first) && first[0] === 'OK' && isDigits(first[1]), 'enqueue OK due_ms', first);
  const again = await enqueue(Q, 'g', '{"do":"ok"}');
  check(JSON.stringify(again) === JSON.stringify(['DUPLICATE', 'pending', '0']), 'enqueue DUPLICATE state attempts', again);

  // Checklist 11: a lapsed lease comes back through recover_expired, called while it reports more;
  // g has one attempt only, so it goes to failed.
  const g = (await claim(Q, 100, 1)).jobs[0];
  check(g && g.id === 'g' && g.attempts === '1', 'claim g', g);
  await sleep(250);
  let toFailed = 0;
  for (let skip = 0; ;) {
    const r = await call('recover_expired', keys(Q), [10, ACTOR, skip]);
    check(Array.isArray(r) && r[0] === 'OK' && r.slice(1).every((v) => typeof v === 'number'), 'recover_expired integers', r);
    toFailed += r[2];
    skip += r[4];
    if (r[5] === 0) break;
  }
  check(toFailed === 1, 'recover_expired moved g, its attempts spent, to failed', toFailed);

  // The job the Python worker will take over after its lease lapses (fencing, phase "stale").
  await enqueue(Q, 'f', '{"do":"hold"}');
  const f = (await claim(Q, 300, 1)).jobs[0];
  check(f && f.id === 'f' && f.attempts === '1', 'claim f', f);
  state.f = f;

  // Checklists 6, 8, 9, 10: three jobs held at once, then extend, complete, fail and release.
  for (const id of ['j1', 'j2', 'j3']) await enqueue(Q, id, `{"do":"ok","id":"${id}"}`);
  const held = (await claim(Q, 60000, 3)).jobs;
  check(held.map((j) => j.id).sort().join() === 'j1,j2,j3', 'claim of several jobs', held);
  const byId = Object.fromEntries(held.map((j) => [j.id, j]));
  const [j1, j2, j3] = ['j1', 'j2', 'j3'].map((id) => byId[id] || { attempts: '0', claimId: '0', deadline: 0 });
  const extended = await call('extend', keys(Q, 'j1'), ['j1', j1.attempts, j1.claimId, 120000, ACTOR]);
  check(extended[0] === 'OK' && Number(extended[1]) > j1.deadline, 'extend pushes the deadline', extended);
  const done = await call('complete', keys(Q, 'j1'), ['j1', j1.attempts, j1.claimId, ACTOR]);
  check(done[0] === 'OK' && isDigits(done[1]), 'complete OK finished_ms', done);
  const twice = await call('complete', keys(Q, 'j1'), ['j1', j1.attempts, j1.claimId, ACTOR]);
  check(JSON.stringify(twice) === JSON.stringify(['REFUSED', 'state', 'done', '1']), 'a second complete is refused', twice);
  const failed = await call('fail', keys(Q, 'j2'), ['j2', j2.attempts, j2.claimId, 'node says no\n100%', 0, ACTOR]);
  check(JSON.stringify(failed.slice(0, 2)) === JSON.stringify(['OK', 'pending']), 'fail while attempts remain', failed);
  const many = await call('complete_many', keys(Q), [ACTOR, 'j2', j2.attempts, j2.claimId, 'j3', j3.attempts, 'ffff']);
  check(Array.isArray(many) && isDigits(many[0]) && JSON.stringify(many.slice(1)) === JSON.stringify([
    ['REFUSED', 'state', 'pending', '1'], ['REFUSED', 'token', 'active', '1']]), 'complete_many fences each job', many);
  const released = await call('release', keys(Q, 'j3'), ['j3', j3.attempts, j3.claimId, ACTOR]);
  check(released[0] === 'OK' && isDigits(released[1]), 'release OK due_ms', released);

  // Checklist 12: a key of another type is refused whole, naming it.
  await redis.send(['SET', `emq:{${Q}-bad}:events`, 'not a stream']);
  const wrong = await enqueue(`${Q}-bad`, 'x', '{}');
  check(JSON.stringify(wrong) === JSON.stringify(['REFUSED', 'wrongtype', `emq:{${Q}-bad}:events`, 'string']),
    'a wrong-typed key is refused whole', wrong);

  // Work for the Python worker: jobs that complete, that fail twice, and one large payload.
  for (let n = 0; n < 6; n++) await enqueue(Q, `ok${n}`, `{"do":"ok","n":${n}}`);
  for (let n = 0; n < 2; n++) await enqueue(Q, `boom${n}`, '{"do":"boom"}', 0, 2);
  await enqueue(Q, 'big', JSON.stringify({ do: 'ok', text: 'é'.repeat(1500) }));
  return { f: { id: f.id, attempts: f.attempts, claim_id: f.claimId } };
}

async function stale() {
  // Checklist 9: the Python worker now holds f (recovered, claimed again); our token is refused.
  const { f } = state;
  const extend = await call('extend', keys(Q, 'f'), ['f', f.attempts, f.claimId, 1000, ACTOR]);
  check(JSON.stringify(extend) === JSON.stringify(['REFUSED', 'token', 'active', '2']), 'a stale extend is refused', extend);
  const complete = await call('complete', keys(Q, 'f'), ['f', f.attempts, f.claimId, ACTOR]);
  check(JSON.stringify(complete) === JSON.stringify(['REFUSED', 'token', 'active', '2']), 'a stale complete is refused', complete);
  const guessed = await call('complete', keys(Q, 'f'), ['f', '2', f.claimId, ACTOR]);
  check(JSON.stringify(guessed) === JSON.stringify(['REFUSED', 'token', 'active', '2']),
    'the current attempts with another claim id is refused', guessed);
  return {};
}

async function verify() {
  const expected = {
    g: ['enqueue', 'claim', 'recover'],
    j1: ['enqueue', 'claim', 'complete'],
    j2: ['enqueue', 'claim', 'fail', 'claim', 'complete'],
    j3: ['enqueue', 'claim', 'release', 'claim', 'complete'],
    f: ['enqueue', 'claim', 'recover', 'claim', 'complete'],
    boom0: ['enqueue', 'claim', 'fail', 'claim', 'fail'],
    ok0: ['enqueue', 'claim', 'complete'],
  };
  const histories = {};
  for (const [id, moves] of Object.entries(expected)) {
    const entries = await history(Q, id);
    histories[id] = entries;
    check(JSON.stringify(entries.map((e) => e.move)) === JSON.stringify(moves), `history of ${id}`, entries);
    check(entries.every((e, i) => i === 0 || e.from === entries[i - 1].to), `from/to chain of ${id}`, entries);
  }
  const nodeFail = histories.j2.find((e) => e.move === 'fail');
  check(nodeFail && nodeFail.error === 'node says no\n100%' && nodeFail.actor === ACTOR, 'a fail entry keeps its error', nodeFail);
  const pyFails = histories.boom0.filter((e) => e.move === 'fail');
  check(pyFails.length === 2 && pyFails.every((e) => e.error.includes('boom')), 'the Python worker\'s errors are kept', pyFails);
  check(histories.f[2].actor !== ACTOR && histories.f[3].actor !== ACTOR, 'the Python worker recovered and claimed f', histories.f);

  // Section 8a: j1's wait (enqueued, so due, -> claimed) and run (claimed -> completed), both by this
  // client, are counted in the latency buckets of the minute of each move.
  const bucket = (ms) => {
    if (ms < 32) return ms;
    let bits = 0;
    while (2 ** bits <= ms) bits += 1;
    const g = bits - 5;
    return 16 * g + Math.floor(ms / 2 ** g);
  };
  const [enq, claimed, completed] = histories.j1;
  if (enq && claimed && completed) {
    const waitField = `W${bucket(claimed.ts - enq.ts)}`;
    const runField = `R${bucket(completed.ts - claimed.ts)}`;
    const waits = await redis.send(['HGET', `emq:{${Q}}:m:${Math.floor(claimed.ts / 60000)}`, waitField]);
    const runs = await redis.send(['HGET', `emq:{${Q}}:m:${Math.floor(completed.ts / 60000)}`, runField]);
    check(Number(waits) >= 1 && Number(runs) >= 1, 'j1\'s wait and run are in their latency buckets',
      [waitField, waits, runField, runs]);
  }

  // Checklist 14: the reads' element types (section 10).
  const job = await call('job', keys(Q, 'big'), ['big', 1000]);
  check(typeof job[0] === 'number' && job.slice(1, 5).every((v) => typeof v === 'string') && job[5] === 'hash'
    && typeof job[6] === 'number' && job[6] > 1000 && job[8] === 0 && Buffer.byteLength(job[7]) <= 256
    && typeof job[9] === 'number', 'job read: types, and a large payload comes as its preview', job.slice(0, 10));
  const page = await call('page', keys(Q), ['done', 'asc', 'offset', 0, '', 50, 120]);
  check(['number', 'number', 'number', 'number'].every((t, i) => typeof page[i] === t) && (page.length - 4) % 10 === 0,
    'page header types', page.slice(0, 4));
  for (let i = 4; i < page.length; i += 10) {
    const row = page.slice(i, i + 10);
    check(typeof row[0] === 'string' && typeof row[1] === 'string' && typeof row[5] === 'number'
      && typeof row[7] === 'number' && row[8] === 'hash' && ['payload', 'preview', 'none'].includes(row[9]), 'page row types', row);
  }
  const stats = await call('stats', keys(Q), []);
  check(stats.slice(0, 7).every((v) => typeof v === 'number') && stats.slice(7).every((v) => typeof v === 'string'),
    'stats types', stats);
  return { counts: stats.slice(1, 5) };
}

async function main() {
  redis = await connect(port);
  const shas = Object.fromEntries(Object.entries(SCRIPTS).map(([name, s]) => [name, s.sha]));
  process.stdout.write(JSON.stringify({ shas }) + '\n');
  const phases = { prepare, stale, verify };
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    const phase = line.replace(/^go /, '');
    if (!phases[phase]) break;
    failures.length = 0;
    let extra = {};
    try {
      extra = await phases[phase]();
    } catch (error) {
      failures.push(`${phase} threw: ${error.stack}`);
    }
    process.stdout.write(JSON.stringify({ phase, failures, ...extra }) + '\n');
  }
  redis.close();
}

main().catch((error) => { console.error(error); process.exit(1); });
