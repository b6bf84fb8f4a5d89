// A second runtime for admit_order.lua that shares no code with the Python one:
// it expands the script's includes, speaks RESP over node's net module, mints
// its own ORD ids and builds its own payloads, following PROTOCOL.md.
//
// usage: node admit_order_client.js PORT LUA_DIR IDS_FILE (client order ids, one a line)
// It connects, prints "ready", waits for a line "go" on stdin, admits every id once and prints
// one JSON line per id: {"client_order_id", "order_id", "outcome"}.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const net = require('net');
const path = require('path');

const [port, luaDir, idsFile] = process.argv.slice(2);

function expand(name) {
  const text = fs.readFileSync(path.join(luaDir, name), 'utf8');
  return text.replace(/^--@include ([\w.]+)$/gm, (_, inc) => expand(inc).replace(/\n+$/, ''));
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
function ulid() {
  let time = Date.now();
  let head = '';
  for (let i = 0; i < 10; i++) { head = CROCKFORD[time % 32] + head; time = Math.floor(time / 32); }
  const random = crypto.randomBytes(16);
  let tail = '';
  for (let i = 0; i < 16; i++) tail += CROCKFORD[random[i] % 32];
  return head + tail;
}

function encode(args) {
  let out = `*${args.length}\r\n`;
  for (const arg of args) out += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
  return out;
}

// Parses one RESP value from buf at offset; returns [value, next] or null when incomplete.
function parse(buf, at) {
  const end = buf.indexOf('\r\n', at);
  if (end < 0) return null;
  const kind = String.fromCharCode(buf[at]);
  const line = buf.toString('utf8', at + 1, end);
  if (kind === '+' || kind === ':') return [line, end + 2];
  if (kind === '-') return [new Error(line), end + 2];
  if (kind === '$') {
    const n = Number(line);
    if (n < 0) return [null, end + 2];
    if (buf.length < end + 2 + n + 2) return null;
    return [buf.toString('utf8', end + 2, end + 2 + n), end + 2 + n + 2];
  }
  if (kind === '*') {
    const items = [];
    let next = end + 2;
    for (let i = 0; i < Number(line); i++) {
      const item = parse(buf, next);
      if (!item) return null;
      items.push(item[0]);
      next = item[1];
    }
    return [items, next];
  }
  throw new Error(`unexpected RESP type ${kind}`);
}

function connect() {
  const socket = net.createConnection({ host: '127.0.0.1', port: Number(port) });
  let buf = Buffer.alloc(0);
  const waiting = [];
  socket.on('data', (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    for (;;) {
      const got = parse(buf, 0);
      if (!got) break;
      buf = buf.subarray(got[1]);
      waiting.shift()(got[0]);
    }
  });
  const send = (args) => new Promise((resolve) => { waiting.push(resolve); socket.write(encode(args)); });
  return new Promise((resolve, reject) => {
    socket.on('connect', () => resolve({ send, close: () => socket.end() }));
    socket.on('error', reject);
  });
}

async function main() {
  const source = expand('admit_order.lua');
  const sha = crypto.createHash('sha1').update(source).digest('hex');
  const ids = fs.readFileSync(idsFile, 'utf8').split('\n').filter(Boolean);
  const redis = await connect();
  await redis.send(['EVALSHA', sha, '0']).then(() => process.stdout.write('ready\n'));
  await new Promise((resolve) => process.stdin.once('data', resolve));
  const prefix = 'emq:{orders}:';
  for (const clientOrderId of ids) {
    const orderId = `ORD-${ulid()}`;
    const order = JSON.stringify({
      command: 'place', version: 1, order_id: orderId, client_order_id: clientOrderId,
      side: 'sell', symbol: 'ACME', type: 'limit', quantity: 2, price: '10.00', time_in_force: 'GTC',
    });
    const keys = ['pending', 'active', 'done', 'failed', 'events', `job:${orderId}`, 'client_ids'].map((k) => prefix + k);
    const argv = ['place', '1', orderId, clientOrderId, order, '3', `node:${process.pid}`];
    let reply = await redis.send(['EVALSHA', sha, String(keys.length), ...keys, ...argv]);
    if (reply instanceof Error && reply.message.startsWith('NOSCRIPT')) {
      reply = await redis.send(['EVAL', source, String(keys.length), ...keys, ...argv]);
    }
    if (reply instanceof Error) throw reply;
    process.stdout.write(JSON.stringify({ client_order_id: clientOrderId, order_id: reply[1], outcome: reply[0] }) + '\n');
  }
  redis.close();
}

main().catch((error) => { console.error(error); process.exit(1); });
