// A second runtime for admit_order.lua that shares no code with the Python one:
// it expands the script's includes, speaks RESP over node's net module, mints
// its own ORD ids and builds its own payloads, following PROTOCOL.md.
//
// usage: node admit_order_client.js PORT LUA_DIRS IDS_FILE (LUA_DIRS joined by the path delimiter;
// client order ids, one a line)
// It connects, prints "ready", waits for a line "go" on stdin, admits every id once and prints
// one JSON line per id: {"client_order_id", "order_id", "outcome"}.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const { connect } = require('../support/resp');

const [port, luaDirs, idsFile] = process.argv.slice(2);

// admit_order.lua lives in exchange/lua and includes common.lua from queues/lua: the first folder that has it.
function expand(name) {
  const dir = luaDirs.split(path.delimiter).find((d) => fs.existsSync(path.join(d, name)));
  const text = fs.readFileSync(path.join(dir, name), 'utf8');
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

async function main() {
  const source = expand('admit_order.lua');
  const sha = crypto.createHash('sha1').update(source).digest('hex');
  const ids = fs.readFileSync(idsFile, 'utf8').split('\n').filter(Boolean);
  const redis = await connect(port);
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
