/*
 * Test helper (Node, not the sandbox): runs snippets against REAL axios and records, per
 * snippet, what the sandbox's stand-in claims to record:
 *
 *   raw   the config axios hands its adapter (axios-mock-adapter's onAny().reply gets it),
 *         described by the same facts as the stand-in's rawView (axios_standin.js);
 *   sent  what axios' Node http adapter writes to the socket: a local HTTP server on 127.0.0.1
 *         records method, request target, headers and body (axios' `transport` option sends
 *         every request there, whatever host the URL names; nothing leaves the machine);
 *   rejected  the promises axios calls returned that rejected.
 *
 * usage: node real_axios_recorder.js SNIPPETS_JSON NODE_MODULES_PARENT
 *   SNIPPETS_JSON: [{"id": ..., "code": ...}]; prints one JSON line per snippet.
 * Each snippet runs twice (raw, sent), each time with a fresh copy of axios, as the body of a
 * strict async function (as in the sandbox) whose `require` gives axios and form-data only.
 */
'use strict';

const fs = require('fs');
const http = require('http');
const path = require('path');
const Module = require('module');

const snippets = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const root = path.resolve(process.argv[3]);
const requireFrom = Module.createRequire(path.join(root, 'package.json'));
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;

const realAxios = requireFrom('axios');
const MockAdapter = requireFrom('axios-mock-adapter');

// A fresh axios per snippet: an instance created from the pristine defaults (deep-copied, so a
// snippet that changes defaults or adds interceptors changes only its own), with the default
// export's statics (CancelToken, AxiosHeaders, ...). Cheaper than loading the module again.
function freshAxios() {
  const inst = realAxios.create();
  for (const key of Object.keys(realAxios)) if (!(key in inst)) inst[key] = realAxios[key];
  return inst;
}

// ---------------------------------------------------------------- raw: the facts the stand-in records

function describeError(e) {
  try {
    if (e instanceof Error || (e !== null && typeof e === 'object' && typeof e.message === 'string')) {
      return String(e.name || 'Error') + ': ' + String(e.message);
    }
    return 'Uncaught ' + String(e);
  } catch (err) {
    return 'Uncaught exception';
  }
}

function jsonFacts(v) {
  try {
    const s = JSON.stringify(v);
    return s === undefined ? { json_absent: true } : { json: JSON.parse(s) };
  } catch (e) {
    return { json_error: describeError(e) };
  }
}

function typeName(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function isObject(v) {
  return v !== null && typeof v === 'object';
}

function rawView(config) {
  const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
  const out = { method: config.method };
  const url = config.url;
  out.url = { type: typeName(url) };
  if (typeof url !== 'symbol') out.url.text = String(url);
  out.params = { present: hasOwn(config, 'params') };
  if (out.params.present) {
    const p = config.params;
    out.params.type = typeName(p);
    out.params.to_json = isObject(p) && typeof p.toJSON === 'function';
    Object.assign(out.params, jsonFacts(p));
  }
  const d = config.data;
  out.data = { type: typeName(d), falsy: !d };
  if (typeof d === 'string') out.data.text = d;
  else if (isObject(d)) {
    const ctor = d.constructor;
    out.data.ctor = ctor == null ? null : String(ctor.name);
    if (Array.isArray(d._streams)) {
      const parts = [];
      for (let i = 0; i + 1 < d._streams.length; i += 3) parts.push([d._streams[i], jsonFacts(d._streams[i + 1])]);
      out.data.parts = parts; // a `form-data` object is read from its parts
    } else Object.assign(out.data, jsonFacts(d));
  } else if (d !== undefined) Object.assign(out.data, jsonFacts(d));
  out.headers = jsonFacts(config.headers).json;
  if (hasOwn(config, 'path_params')) out.path_params = jsonFacts(config.path_params);
  // the rest of what mock.js serializes (axios-mock-adapter deleted `adapter` already)
  const rest = {};
  for (const k of Object.keys(config)) if (!['url', 'params', 'data', 'headers', 'adapter'].includes(k)) rest[k] = config[k];
  const facts = jsonFacts(rest);
  out.rest = facts.json;
  if (facts.json_error) out.json_error = facts.json_error;
  return out;
}

// ---------------------------------------------------------------- running one snippet

const state = { rejected: null, pending: 0 };
process.on('unhandledRejection', () => {});

function makeRequire(axios) {
  return function require(name) {
    if (name === 'axios') return axios;
    if (name === 'form-data') return requireFrom('form-data');
    throw new Error(`require('${name}') is not available in the differential test`);
  };
}

function compile(code) {
  let params = ['axios', 'require', 'module', 'exports'];
  for (;;) {
    try {
      return { params, fn: new AsyncFunction(...params, '"use strict";\n' + code + '\n') };
    } catch (e) {
      const m = e instanceof SyntaxError && /Identifier '([^']+)' has already been declared/.exec(e.message);
      if (!m || params.indexOf(m[1]) === -1) throw e;
      params = params.filter((p) => p !== m[1]);
    }
  }
}

// Wrap the entry points so that every promise an axios call returns reports its rejection.
function watch(axios, rejected) {
  const wrapFn = (fn, self) =>
    function (...args) {
      const p = fn.apply(this === undefined ? self : this, args);
      Promise.resolve(p).then(undefined, (e) => rejected.push(describeError(e)));
      return p;
    };
  const methods = ['request', 'get', 'delete', 'head', 'options', 'post', 'put', 'patch', 'query',
    'postForm', 'putForm', 'patchForm'];
  const wrapInstance = (inst) => {
    const top = wrapFn(inst, inst);
    for (const key of Object.keys(inst)) top[key] = inst[key];
    for (const m of methods) if (typeof inst[m] === 'function') top[m] = wrapFn(inst[m], inst);
    const create = inst.create;
    if (typeof create === 'function') top.create = (...a) => wrapInstance(create.apply(inst, a));
    top.defaults = inst.defaults;
    top.interceptors = inst.interceptors;
    top.default = top;
    return top;
  };
  return wrapInstance(axios);
}

// Until the snippet's function settled and every request it sent was answered (at most 3 s).
async function settle(done) {
  let finished = false;
  done.then(() => { finished = true; });
  const start = Date.now();
  for (let i = 0; i < 20 || state.pending > 0 || !finished; i++) {
    await new Promise((r) => setImmediate(r));
    if (Date.now() - start > 3000) break;
  }
}

async function runSnippet(snippet, mode, server) {
  state.pending = 0;
  const axios = freshAxios();
  const out = { raw: [], sent: [], rejected: [], error: null };
  if (mode === 'raw') {
    new MockAdapter(axios).onAny().reply((config) => {
      out.raw.push(rawView(config));
      return [200, {}];
    });
  } else {
    axios.defaults.transport = {
      request(options, cb) {
        const req = http.request(
          Object.assign({}, options, { hostname: '127.0.0.1', host: undefined, port: server.port, agent: false,
            lookup: undefined, family: undefined, protocol: 'http:' }),
          (res) => {
            res.on('end', () => { state.pending--; });
            cb(res);
          }
        );
        state.pending++; // http.request did not throw (it does for a target it cannot send)
        req.on('socket', (sock) => sock.on('connect', () => server.expect(sock.localPort, out, options)));
        req.on('error', () => { state.pending--; });
        return req;
      },
    };
  }
  const wrapped = watch(axios, out.rejected);
  let compiled;
  try {
    compiled = compile(snippet.code);
  } catch (e) {
    out.error = describeError(e);
    return out;
  }
  const values = { axios: wrapped, require: makeRequire(wrapped), module: { exports: {} }, exports: {} };
  const run = compiled.fn(...compiled.params.map((p) => values[p])).then(
    () => {},
    (e) => { out.error = describeError(e); }
  );
  await settle(run);
  return out;
}

// ---------------------------------------------------------------- the recorder server

function startServer() {
  const byPort = new Map();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const target = byPort.get(req.socket.remotePort);
      if (target) {
        const headers = {};
        for (let i = 0; i < req.rawHeaders.length; i += 2) {
          const name = req.rawHeaders[i];
          headers[name] = name in headers ? [].concat(headers[name], req.rawHeaders[i + 1]) : req.rawHeaders[i + 1];
        }
        target.out.sent.push({
          method: req.method,
          target: req.url,
          host: target.options.hostname + (target.options.port ? ':' + target.options.port : ''),
          protocol: target.options.protocol,
          headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
      }
      res.writeHead(200, { 'Content-Type': 'application/json', Connection: 'close' });
      res.end('{}');
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        port: server.address().port,
        expect: (port, out, options) => byPort.set(port, { out, options }),
        close: () => server.close(),
      });
    });
  });
}

(async () => {
  const server = await startServer();
  for (const snippet of snippets) {
    const raw = await runSnippet(snippet, 'raw', server);
    const sent = await runSnippet(snippet, 'sent', server);
    process.stdout.write(JSON.stringify({
      id: snippet.id,
      raw: raw.raw,
      raw_rejected: raw.rejected,
      raw_error: raw.error,
      sent: sent.sent,
      sent_rejected: sent.rejected,
      sent_error: sent.error,
    }) + '\n');
  }
  server.close();
  process.exit(0);
})();
