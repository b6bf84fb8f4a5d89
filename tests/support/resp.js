// A RESP2 client over node's net module, for the Node runtimes the tests run beside the Python one
// (they share no code with queues/). Replies: integers as numbers, bulk strings as strings (UTF-8),
// nil as null, errors as Error values, status replies as {status}.
'use strict';
const net = require('net');

function encode(args) {
  const parts = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const data = Buffer.isBuffer(arg) ? arg : Buffer.from(String(arg), 'utf8');
    parts.push(Buffer.from(`$${data.length}\r\n`), data, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

// One value from buf at offset: [value, next offset], or null while incomplete.
function parse(buf, at) {
  const end = buf.indexOf('\r\n', at);
  if (end < 0) return null;
  const kind = String.fromCharCode(buf[at]);
  const line = buf.toString('utf8', at + 1, end);
  if (kind === '+') return [{ status: line }, end + 2];
  if (kind === ':') return [Number(line), end + 2];
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

// Resolves to {send(args) -> Promise<reply>, close()}; replies come back in the order asked.
function connect(port, host = '127.0.0.1') {
  const socket = net.createConnection({ host, port: Number(port) });
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

module.exports = { connect, encode, parse };
