/*
 * callbench axios stand-in (plain ES2020, no dependencies).
 *
 * Why this is hand-written: the sandbox runs model-written code in a bare V8 isolate
 * that has no Node core modules, no network and no event loop, so the real axios
 * package cannot run there.  This file re-implements the part of axios 1.x that turns
 * a call into a request config (mergeConfig, header flattening, AxiosHeaders,
 * the default transformRequest and dispatchRequest's Content-Type default), records
 * that config instead of sending it, and resolves to a fake response.  It also ships
 * the few Node/web globals that API-call snippets lean on (FormData, URLSearchParams,
 * URL, Buffer, AbortController, console, process, require, timers), because bare V8
 * has none of them.
 *
 * Evaluating this file defines one global, `__callbenchStandin(options)`.  Each call
 * returns a fresh per-sample environment `{bindings, recorder, arm}`: `bindings` maps
 * the names a sample sees (axios, require, console, ...) to fresh objects, `recorder`
 * reads back what the sample did, and `arm()` issues a one-shot call token: the harness
 * makes the call its static extractor picked pass `arm()` as its last argument (so the
 * token is made after every other argument was evaluated, just before that call), and an
 * axios entry point whose last argument is the token issued last takes it off, spends it
 * before it runs anything else, and flags the request it makes.  The host can so tell
 * whether the first recorded request came from the picked call.  `arm` is never a
 * binding: only the harness holds it (see js_harness.js).  Once `recorder.close()` has run, the environment
 * records nothing more.  Classes and pure helpers are shared between samples (the
 * sandbox deep-freezes them, and keeps no regex, Map or other object whose internal
 * state a freeze leaves mutable among them unchecked); everything with state is per
 * sample.
 */
globalThis.__callbenchStandin = (function () {
  'use strict';

  var MAX_BYTES = 64 * 1024 * 1024; // largest Buffer the stand-in will allocate
  var ACCEPT_DEFAULT = 'application/json, text/plain, */*';
  var METHODS_NO_DATA = ['delete', 'get', 'head', 'options'];
  var METHODS_WITH_DATA = ['post', 'put', 'patch', 'query'];
  var HEADER_BUCKETS = ['get', 'delete', 'head', 'options', 'post', 'put', 'patch', 'purge', 'link', 'unlink', 'query', 'common'];
  var ENTRIES = Symbol('entries');
  var OriginalUint8Array = Uint8Array;
  var captureStackTrace = Error.captureStackTrace;
  // what `unmark` gives for a request made by one of a starter's own calls (see `starterArm`)
  var STARTER = Object.freeze({ starter: true });
  var FRAME = '\n    at ';
  var POSITION = /:\d+:\d+\)?$/;

  // Was an entry point whose stack below itself is `at` called straight from the call that made
  // a starter token, whose stack below `starterArm` was `armed`?  The same frames but the first,
  // which is the same function at another position (the call's, not its last argument's): a
  // function of the sample's own in between adds a frame.  Stacks of `Error.stackTraceLimit`
  // frames never match (a cut stack could hide one); a function whose name holds a frame break
  // fails closed.
  function sameSite(armed, at) {
    if (typeof armed !== 'string' || typeof at !== 'string') return false;
    var limit = Error.stackTraceLimit;
    if (typeof limit !== 'number' || at.split(FRAME).length - 1 >= limit) return false;
    var i = armed.indexOf(FRAME);
    var k = at.indexOf(FRAME);
    if (i === -1 || k === -1 || armed.slice(0, i) !== at.slice(0, k)) return false;
    var j = armed.indexOf(FRAME, i + 1);
    var l = at.indexOf(FRAME, k + 1);
    var restArmed = j === -1 ? '' : armed.slice(j);
    var restAt = l === -1 ? '' : at.slice(l);
    var firstArmed = armed.slice(i, j === -1 ? armed.length : j);
    var firstAt = at.slice(k, l === -1 ? at.length : l);
    return restArmed === restAt && POSITION.test(firstAt) &&
      firstArmed.replace(POSITION, '') === firstAt.replace(POSITION, '');
  }

  // ------------------------------------------------------------------ helpers

  function isObject(v) {
    return v !== null && typeof v === 'object';
  }

  function isPlainObject(v) {
    if (!isObject(v)) return false;
    var proto = Object.getPrototypeOf(v);
    return (proto === null || proto === Object.prototype || Object.getPrototypeOf(proto) === null) &&
      !(Symbol.toStringTag in v) && !(Symbol.iterator in v);
  }

  // Keys come from user data: "__proto__" and names inherited from (possibly frozen)
  // prototypes must be defined, not assigned.  Plain keys take the fast path.
  function put(obj, key, value) {
    if (key in obj && !Object.prototype.hasOwnProperty.call(obj, key)) {
      Object.defineProperty(obj, key, { value: value, writable: true, enumerable: true, configurable: true });
    } else {
      obj[key] = value;
    }
  }

  function hasOwn(obj, key) {
    return Object.prototype.hasOwnProperty.call(obj, key);
  }

  function endsWith(s, suffix) {
    return typeof s === 'string' && s.slice(-suffix.length) === suffix;
  }

  function safeDecode(s) {
    try {
      return decodeURIComponent(s);
    } catch (e) {
      return s;
    }
  }

  function formDecode(s) {
    return safeDecode(String(s).replace(/\+/g, ' '));
  }

  function formEncode(s) {
    return encodeURIComponent(String(s))
      .replace(/[!'()~]/g, function (c) { return '%' + c.charCodeAt(0).toString(16).toUpperCase(); })
      .replace(/%20/g, '+');
  }

  function jsonClone(v) {
    if (v === undefined) return undefined;
    try {
      var s = JSON.stringify(v);
      return s === undefined ? undefined : JSON.parse(s);
    } catch (e) {
      return String(v);
    }
  }

  function findKey(obj, key) {
    key = String(key).toLowerCase();
    var keys = Object.keys(obj);
    for (var i = keys.length - 1; i >= 0; i--) {
      if (keys[i].toLowerCase() === key) return keys[i];
    }
    return null;
  }

  function describeError(e) {
    try {
      if (e instanceof Error || (isObject(e) && typeof e.message === 'string')) {
        return String(e.name || 'Error') + ': ' + String(e.message);
      }
      return 'Uncaught ' + String(e);
    } catch (err) {
      return 'Uncaught exception';
    }
  }

  // ------------------------------------------------------------------ bytes

  function utf8Encode(str) {
    var out = [];
    for (var i = 0; i < str.length; i++) {
      var c = str.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < str.length) {
        var d = str.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          i++;
        } else {
          c = 0xfffd;
        }
      } else if (c >= 0xd800 && c <= 0xdfff) {
        c = 0xfffd;
      }
      if (c < 0x80) out.push(c);
      else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
      else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
      else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    }
    return out;
  }

  function utf8Decode(bytes, start, end) {
    var s = '';
    var i = start;
    while (i < end) {
      var b = bytes[i++];
      var c;
      if (b < 0x80) c = b;
      else if (b >= 0xc0 && b < 0xe0 && i < end) c = ((b & 31) << 6) | (bytes[i++] & 63);
      else if (b >= 0xe0 && b < 0xf0 && i + 1 < end) {
        c = ((b & 15) << 12) | ((bytes[i] & 63) << 6) | (bytes[i + 1] & 63);
        i += 2;
      } else if (b >= 0xf0 && i + 2 < end) {
        c = ((b & 7) << 18) | ((bytes[i] & 63) << 12) | ((bytes[i + 1] & 63) << 6) | (bytes[i + 2] & 63);
        i += 3;
      } else c = 0xfffd;
      s += String.fromCodePoint(c > 0x10ffff ? 0xfffd : c);
    }
    return s;
  }

  var B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

  function base64Encode(bytes, start, end, url) {
    var out = '';
    for (var i = start; i < end; i += 3) {
      var n = (bytes[i] << 16) | ((i + 1 < end ? bytes[i + 1] : 0) << 8) | (i + 2 < end ? bytes[i + 2] : 0);
      out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63];
      out += i + 1 < end ? B64[(n >> 6) & 63] : (url ? '' : '=');
      out += i + 2 < end ? B64[n & 63] : (url ? '' : '=');
    }
    return url ? out.replace(/\+/g, '-').replace(/\//g, '_') : out;
  }

  function base64Decode(str) {
    var clean = String(str).replace(/-/g, '+').replace(/_/g, '/').replace(/[^A-Za-z0-9+/]/g, '');
    var out = [];
    var buf = 0;
    var bits = 0;
    for (var i = 0; i < clean.length; i++) {
      buf = (buf << 6) | B64.indexOf(clean[i]);
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out.push((buf >> bits) & 255);
      }
    }
    return out;
  }

  function encodeString(str, enc) {
    str = String(str);
    switch (String(enc || 'utf8').toLowerCase()) {
      case 'base64':
      case 'base64url':
        return base64Decode(str);
      case 'hex': {
        var out = [];
        for (var i = 0; i + 1 < str.length; i += 2) {
          var v = parseInt(str.substr(i, 2), 16);
          if (Number.isNaN(v)) break;
          out.push(v);
        }
        return out;
      }
      case 'latin1':
      case 'binary':
      case 'ascii': {
        var bytes = [];
        for (var j = 0; j < str.length; j++) bytes.push(str.charCodeAt(j) & 255);
        return bytes;
      }
      default:
        return utf8Encode(str);
    }
  }

  function decodeBytes(bytes, enc, start, end) {
    switch (String(enc || 'utf8').toLowerCase()) {
      case 'base64':
        return base64Encode(bytes, start, end, false);
      case 'base64url':
        return base64Encode(bytes, start, end, true);
      case 'hex': {
        var h = '';
        for (var i = start; i < end; i++) h += (bytes[i] < 16 ? '0' : '') + bytes[i].toString(16);
        return h;
      }
      case 'latin1':
      case 'binary':
      case 'ascii': {
        var s = '';
        for (var j = start; j < end; j++) s += String.fromCharCode(bytes[j]);
        return s;
      }
      default:
        return utf8Decode(bytes, start, end);
    }
  }

  // Node's Buffer, reduced to what request code uses (mostly Basic-auth base64).
  class Buffer extends OriginalUint8Array {
    constructor(a, b, c) {
      if (typeof a === 'number' && a > MAX_BYTES) throw new RangeError('Buffer too large for the sandbox');
      if (c === undefined) {
        if (b === undefined) super(a);
        else super(a, b);
      } else super(a, b, c);
    }

    static from(value, encodingOrOffset, length) {
      var bytes;
      if (typeof value === 'string') bytes = encodeString(value, encodingOrOffset);
      else if (value instanceof ArrayBuffer) return new Buffer(value, encodingOrOffset || 0, length);
      else if (isObject(value) && value.type === 'Buffer' && Array.isArray(value.data)) bytes = value.data;
      else if (isObject(value) && (Array.isArray(value) || ArrayBuffer.isView(value) || typeof value.length === 'number')) bytes = Array.from(value);
      else throw new TypeError('The first argument must be of type string or an instance of Buffer, ArrayBuffer, or Array');
      if (bytes.length > MAX_BYTES) throw new RangeError('Buffer too large for the sandbox');
      var buf = new Buffer(bytes.length);
      for (var i = 0; i < bytes.length; i++) buf[i] = bytes[i];
      return buf;
    }

    static alloc(size, fill) {
      var buf = new Buffer(Number(size) || 0);
      if (fill !== undefined) buf.fill(typeof fill === 'number' ? fill : 0);
      return buf;
    }

    static allocUnsafe(size) {
      return new Buffer(Number(size) || 0);
    }

    static isBuffer(x) {
      return x instanceof Buffer;
    }

    static byteLength(value, enc) {
      return typeof value === 'string' ? encodeString(value, enc).length : value.byteLength;
    }

    static concat(list, total) {
      var size = 0;
      for (var i = 0; i < list.length; i++) size += list[i].length;
      if (total !== undefined) size = total;
      var out = new Buffer(size);
      var pos = 0;
      for (var k = 0; k < list.length && pos < size; k++) {
        for (var j = 0; j < list[k].length && pos < size; j++) out[pos++] = list[k][j];
      }
      return out;
    }

    toString(enc, start, end) {
      var s = start === undefined ? 0 : Math.max(0, start | 0);
      var e = end === undefined ? this.length : Math.min(this.length, end | 0);
      return decodeBytes(this, enc, s, e);
    }

    toJSON() {
      return { type: 'Buffer', data: Array.from(this) };
    }

    equals(other) {
      if (!other || other.length !== this.length) return false;
      for (var i = 0; i < this.length; i++) if (this[i] !== other[i]) return false;
      return true;
    }

    write(str, offset, length, enc) {
      var bytes = encodeString(str, enc);
      var o = offset | 0;
      var n = Math.min(bytes.length, length === undefined ? this.length - o : length | 0);
      for (var i = 0; i < n; i++) this[o + i] = bytes[i];
      return n;
    }
  }

  function btoa(data) {
    var s = String(data);
    var bytes = [];
    for (var i = 0; i < s.length; i++) {
      var c = s.charCodeAt(i);
      if (c > 255) throw new Error('Invalid character');
      bytes.push(c);
    }
    return base64Encode(bytes, 0, bytes.length, false);
  }

  function atob(data) {
    var bytes = base64Decode(data);
    var s = '';
    for (var i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
    return s;
  }

  function bytesToText(data) {
    if (data instanceof ArrayBuffer) data = new OriginalUint8Array(data);
    if (ArrayBuffer.isView(data)) {
      var view = new OriginalUint8Array(data.buffer, data.byteOffset, data.byteLength);
      return utf8Decode(view, 0, view.length);
    }
    return null;
  }

  // ------------------------------------------------------------------ FormData / URLSearchParams

  function pairIterator(list, pick) {
    var i = 0;
    var it = {
      next: function () {
        if (i >= list.length) return { value: undefined, done: true };
        var p = list[i++];
        return { value: pick(p), done: false };
      }
    };
    it[Symbol.iterator] = function () { return it; };
    return it;
  }

  function entriesOf(self) {
    var list = self[ENTRIES];
    if (!list) throw new TypeError('Illegal invocation');
    return list;
  }

  function initEntries(self) {
    Object.defineProperty(self, ENTRIES, { value: [], writable: false, enumerable: false, configurable: false });
    return self[ENTRIES];
  }

  // Shared list-of-pairs behaviour of FormData and URLSearchParams.
  class PairList {
    append(name, value) {
      entriesOf(this).push([String(name), String(value)]);
    }

    set(name, value) {
      var list = entriesOf(this);
      name = String(name);
      var idx = -1;
      for (var i = list.length - 1; i >= 0; i--) {
        if (list[i][0] === name) {
          if (idx !== -1) list.splice(idx, 1);
          idx = i;
        }
      }
      if (idx === -1) list.push([name, String(value)]);
      else list[idx] = [name, String(value)];
    }

    get(name) {
      var list = entriesOf(this);
      for (var i = 0; i < list.length; i++) if (list[i][0] === String(name)) return list[i][1];
      return null;
    }

    getAll(name) {
      return entriesOf(this).filter(function (p) { return p[0] === String(name); }).map(function (p) { return p[1]; });
    }

    has(name, value) {
      return entriesOf(this).some(function (p) {
        return p[0] === String(name) && (value === undefined || p[1] === String(value));
      });
    }

    delete(name, value) {
      var list = entriesOf(this);
      for (var i = list.length - 1; i >= 0; i--) {
        if (list[i][0] === String(name) && (value === undefined || list[i][1] === String(value))) list.splice(i, 1);
      }
    }

    entries() {
      return pairIterator(entriesOf(this), function (p) { return [p[0], p[1]]; });
    }

    keys() {
      return pairIterator(entriesOf(this), function (p) { return p[0]; });
    }

    values() {
      return pairIterator(entriesOf(this), function (p) { return p[1]; });
    }

    forEach(cb, thisArg) {
      var list = entriesOf(this).slice();
      for (var i = 0; i < list.length; i++) cb.call(thisArg, list[i][1], list[i][0], this);
    }

    [Symbol.iterator]() {
      return this.entries();
    }
  }

  class FormData extends PairList {
    constructor() {
      super();
      initEntries(this);
    }

    get [Symbol.toStringTag]() {
      return 'FormData';
    }
  }

  // The npm package `form-data` (what Node code gets from require('form-data'); axios depends on
  // it). Unlike the web FormData above it is a stream, not iterable, keeps every part as
  // [header, value, footer] in `_streams` (WAPIIBench's mock.js reads the parts from there), and
  // gives its own multipart headers through getHeaders().  Values as the package keeps them:
  // numbers, null and undefined become strings; an array is refused (not appended).
  var PackageFormData = (function () {
    var PARTS = Symbol('parts');
    return class FormData {
      constructor(options) {
        Object.defineProperty(this, PARTS, { value: [], writable: false, enumerable: false, configurable: false });
        if (isObject(options)) {
          Object.keys(options).forEach(function (k) { put(this, k, options[k]); }, this);
        }
      }

      append(field, value, options) {
        if (typeof value === 'number' || value == null) value = String(value);
        if (Array.isArray(value)) return;
        if (typeof options === 'string') options = { filename: options };
        var filename = isObject(options) && options.filename != null ? String(options.filename) : null;
        var header = '--' + this.getBoundary() + '\r\nContent-Disposition: form-data; name="' +
          escapeFormParam(field) + '"' + (filename !== null ? '; filename="' + escapeFormParam(filename) + '"' : '') + '\r\n';
        if (isObject(value) || filename !== null) header += 'Content-Type: application/octet-stream\r\n';
        this[PARTS].push([header + '\r\n', value, String(field)]);
      }

      getBoundary() {
        return this._boundary || PACKAGE_BOUNDARY;
      }

      setBoundary(boundary) {
        if (typeof boundary !== 'string') throw new TypeError('FormData boundary must be a string');
        this._boundary = boundary;
      }

      getHeaders(userHeaders) {
        var out = { 'content-type': 'multipart/form-data; boundary=' + this.getBoundary() };
        if (isObject(userHeaders)) {
          Object.keys(userHeaders).forEach(function (k) { put(out, k.toLowerCase(), userHeaders[k]); });
        }
        return out;
      }

      // The multipart text (bodies here are text; a Buffer part is written as UTF-8).
      getBody() {
        var parts = this[PARTS];
        var out = '';
        for (var i = 0; i < parts.length; i++) out += parts[i][0] + partText(parts[i][1]) + '\r\n';
        return parts.length ? out + '--' + this.getBoundary() + '--\r\n' : '';
      }

      getBuffer() {
        return Buffer.from(this.getBody());
      }

      getLengthSync() {
        return utf8Encode(this.getBody()).length;
      }

      getLength(cb) {
        var n = this.getLengthSync();
        if (typeof cb === 'function') Promise.resolve().then(function () { cb(null, n); });
      }

      hasKnownLength() {
        return true;
      }

      // [header, value] of every part, as `_streams` holds them (without the footers).
      parts() {
        return this[PARTS].map(function (p) { return [p[0], p[1]]; });
      }

      // [name, value] of every part (the values as the parts carry them, as strings).
      fields() {
        return this[PARTS].map(function (p) { return [p[2], partText(p[1])]; });
      }

      on() { return this; }
      once() { return this; }
      pipe(dest) { return dest; }

      toString() {
        return '[object FormData]';
      }

      get [Symbol.toStringTag]() {
        return 'FormData';
      }
    };
  })();

  var PACKAGE_BOUNDARY = '--------------------------000000000000000000000000';

  function escapeFormParam(str) {
    return String(str).replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');
  }

  function partText(value) {
    if (typeof value === 'string') return value;
    var text = bytesToText(value);
    return text !== null ? text : String(value);
  }

  function parseQueryPairs(str) {
    var out = [];
    str = String(str);
    if (str[0] === '?') str = str.slice(1);
    var parts = str.split('&');
    for (var i = 0; i < parts.length; i++) {
      if (!parts[i]) continue;
      var eq = parts[i].indexOf('=');
      if (eq === -1) out.push([formDecode(parts[i]), '', false]);
      else out.push([formDecode(parts[i].slice(0, eq)), formDecode(parts[i].slice(eq + 1)), true]);
    }
    return out;
  }

  class URLSearchParams extends PairList {
    constructor(init) {
      super();
      var list = initEntries(this);
      if (init == null) return;
      if (typeof init === 'string') {
        parseQueryPairs(init).forEach(function (p) { list.push([p[0], p[1]]); });
      } else if (isObject(init) && typeof init[Symbol.iterator] === 'function') {
        for (var pair of init) {
          var arr = Array.from(pair);
          if (arr.length !== 2) throw new TypeError('Each query pair must be an iterable [name, value] tuple');
          list.push([String(arr[0]), String(arr[1])]);
        }
      } else if (isObject(init)) {
        Object.keys(init).forEach(function (k) { list.push([k, String(init[k])]); });
      } else {
        parseQueryPairs(String(init)).forEach(function (p) { list.push([p[0], p[1]]); });
      }
    }

    get size() {
      return entriesOf(this).length;
    }

    sort() {
      entriesOf(this).sort(function (a, b) { return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0; });
    }

    toString() {
      return entriesOf(this).map(function (p) { return formEncode(p[0]) + '=' + formEncode(p[1]); }).join('&');
    }

    get [Symbol.toStringTag]() {
      return 'URLSearchParams';
    }
  }

  // ------------------------------------------------------------------ URL (small WHATWG subset)

  var URL_RE = /^([a-zA-Z][a-zA-Z\d+.-]*:)(?:\/\/(?:([^:@/?#]*)(?::([^@/?#]*))?@)?(\[[^\]]*\]|[^/?#:]*)(?::(\d*))?)?([^?#]*)(\?[^#]*)?(#.*)?$/;
  var DEFAULT_PORTS = { 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443', 'ftp:': '21' };

  function removeDotSegments(path) {
    var out = [];
    var segs = path.split('/');
    for (var i = 0; i < segs.length; i++) {
      var s = segs[i];
      if (s === '..') {
        if (out.length > 1) out.pop();
      } else if (s !== '.') out.push(s);
    }
    var last = segs[segs.length - 1];
    if (last === '.' || last === '..') out.push('');
    return out.join('/');
  }

  class URL {
    constructor(url, base) {
      var s = String(url).trim();
      if (!/^[a-zA-Z][a-zA-Z\d+.-]*:/.test(s)) {
        if (base === undefined) throw new TypeError('Invalid URL: ' + s);
        var b = base instanceof URL ? base : new URL(base);
        var root = b.protocol + '//' + b.host;
        if (s.slice(0, 2) === '//') s = b.protocol + s;
        else if (s[0] === '/') s = root + s;
        else if (s[0] === '?') s = root + b.pathname + s;
        else if (s[0] === '#') s = root + b.pathname + b.search + s;
        else if (s === '') s = b.href.replace(/#.*$/, '');
        else s = root + b.pathname.replace(/[^/]*$/, '') + s;
      }
      var m = URL_RE.exec(s);
      if (!m) throw new TypeError('Invalid URL: ' + s);
      this._protocol = m[1].toLowerCase();
      this._username = m[2] || '';
      this._password = m[3] || '';
      this._hostname = (m[4] || '').toLowerCase();
      var port = m[5] || '';
      this._port = DEFAULT_PORTS[this._protocol] === port ? '' : port;
      var path = (m[6] || '').replace(/ /g, '%20');
      if (m[4] !== undefined && path === '') path = '/';
      this._pathname = path[0] === '/' ? removeDotSegments(path) : path;
      this._hash = m[8] && m[8] !== '#' ? m[8] : '';
      this._searchParams = new URLSearchParams(m[7] || '');
    }

    get protocol() { return this._protocol; }
    set protocol(v) { this._protocol = String(v).replace(/:?$/, ':').toLowerCase(); }
    get username() { return this._username; }
    set username(v) { this._username = String(v); }
    get password() { return this._password; }
    set password(v) { this._password = String(v); }
    get hostname() { return this._hostname; }
    set hostname(v) { this._hostname = String(v).toLowerCase(); }
    get port() { return this._port; }
    set port(v) { this._port = String(v); }
    get host() { return this._hostname + (this._port ? ':' + this._port : ''); }
    get origin() { return this._protocol + '//' + this.host; }
    get pathname() { return this._pathname; }
    set pathname(v) { v = String(v); this._pathname = v[0] === '/' ? v : '/' + v; }
    get search() {
      var q = this._searchParams.toString();
      return q ? '?' + q : '';
    }
    set search(v) {
      var list = entriesOf(this._searchParams);
      list.length = 0;
      parseQueryPairs(String(v)).forEach(function (p) { list.push([p[0], p[1]]); });
    }
    get searchParams() { return this._searchParams; }
    get hash() { return this._hash; }
    set hash(v) { v = String(v); this._hash = v ? (v[0] === '#' ? v : '#' + v) : ''; }
    get href() {
      var auth = this._username ? this._username + (this._password ? ':' + this._password : '') + '@' : '';
      return this._protocol + '//' + auth + this.host + this._pathname + this.search + this._hash;
    }
    toString() { return this.href; }
    toJSON() { return this.href; }
    static canParse(url, base) {
      try {
        new URL(url, base); // eslint-disable-line no-new
        return true;
      } catch (e) {
        return false;
      }
    }
  }

  // ------------------------------------------------------------------ AbortController

  class AbortSignal {
    constructor() {
      this.aborted = false;
      this.reason = undefined;
      this.onabort = null;
      Object.defineProperty(this, '_listeners', { value: [], enumerable: false });
    }

    addEventListener(type, fn) {
      if (type === 'abort' && typeof fn === 'function') this._listeners.push(fn);
    }

    removeEventListener(type, fn) {
      var i = this._listeners.indexOf(fn);
      if (i !== -1) this._listeners.splice(i, 1);
    }

    throwIfAborted() {
      if (this.aborted) throw this.reason;
    }

    static abort(reason) {
      var c = new AbortController();
      c.abort(reason);
      return c.signal;
    }

    static timeout() {
      return new AbortController().signal; // virtual time never reaches the deadline
    }
  }

  class AbortController {
    constructor() {
      this.signal = new AbortSignal();
    }

    abort(reason) {
      var s = this.signal;
      if (s.aborted) return;
      s.aborted = true;
      s.reason = reason === undefined ? new Error('This operation was aborted') : reason;
      if (typeof s.onabort === 'function') s.onabort({ type: 'abort' });
      s._listeners.slice().forEach(function (fn) { fn({ type: 'abort' }); });
    }
  }

  // ------------------------------------------------------------------ AxiosHeaders

  // As axios 1.21 stores a header value: a string without control characters (tab kept),
  // spaces and tabs around it trimmed.
  function normalizeHeaderValue(value) {
    if (value === false || value == null) return value;
    if (Array.isArray(value)) return value.map(normalizeHeaderValue);
    return String(value).replace(/[\u0000-\u0008\u000a-\u001f\u007f]+/g, '').replace(/^[ \t]+|[ \t]+$/g, '');
  }

  function normalizeHeaderName(header) {
    return header && String(header).trim().toLowerCase();
  }

  // A header named like one of AxiosHeaders' own members (`get`, `set`, `constructor`, ...) is
  // kept under its capitalized name, as axios 1.21 does (`__proto__` as `__Proto__`).
  function headerSlot(name) {
    name = String(name);
    if (name === '__proto__') return '__Proto__';
    return hasOwn(AxiosHeaders.prototype, name) ? name[0].toUpperCase() + name.slice(1) : name;
  }

  // Headers live as own enumerable properties, as in axios, so interceptors can
  // write `config.headers.Authorization = ...`.
  class AxiosHeaders {
    constructor(headers) {
      if (headers) this.set(headers);
    }

    set(header, valueOrRewrite, rewrite) {
      var self = this;
      function setHeader(value, name, rw) {
        var lHeader = normalizeHeaderName(name);
        if (!lHeader) return;
        var key = findKey(self, lHeader);
        if (!key || self[key] === undefined || rw === true || (rw === undefined && self[key] !== false)) {
          put(self, headerSlot(key || name), normalizeHeaderValue(value));
        }
      }
      if (isPlainObject(header) || header instanceof AxiosHeaders) {
        Object.keys(header).forEach(function (k) { setHeader(header[k], k, valueOrRewrite); });
      } else if (isObject(header) && typeof header[Symbol.iterator] === 'function') {
        for (var pair of header) setHeader(pair[1], pair[0], valueOrRewrite);
      } else if (header != null) {
        setHeader(valueOrRewrite, header, rewrite);
      }
      return this;
    }

    get(header) {
      var name = normalizeHeaderName(header);
      if (!name) return undefined;
      var key = findKey(this, name);
      return key ? this[key] : undefined;
    }

    has(header) {
      var name = normalizeHeaderName(header);
      return !!(name && findKey(this, name));
    }

    delete(header) {
      var self = this;
      var deleted = false;
      (Array.isArray(header) ? header : [header]).forEach(function (h) {
        var key = normalizeHeaderName(h) && findKey(self, normalizeHeaderName(h));
        if (key) {
          delete self[key];
          deleted = true;
        }
      });
      return deleted;
    }

    clear() {
      var self = this;
      Object.keys(this).forEach(function (k) { delete self[k]; });
      return true;
    }

    // Collapse case-insensitive duplicates into the first spelling (later value wins).
    normalize() {
      var self = this;
      var seen = {};
      Object.keys(this).forEach(function (header) {
        var value = self[header];
        var key = findKey(seen, header);
        if (key) {
          put(self, key, normalizeHeaderValue(value));
          delete self[header];
          return;
        }
        var trimmed = String(header).trim();
        if (trimmed !== header) delete self[header];
        put(self, trimmed, normalizeHeaderValue(value));
        seen[trimmed] = true;
      });
      return this;
    }

    toJSON() {
      var self = this;
      var obj = {};
      Object.keys(this).forEach(function (k) {
        var v = self[k];
        if (v == null || v === false) return;
        put(obj, k, Array.isArray(v) ? v.slice() : v);
      });
      return obj;
    }

    getContentType() { return this.get('Content-Type'); }
    setContentType(v, rw) { return this.set('Content-Type', v, rw); }
    hasContentType() { return this.has('Content-Type'); }
    getAuthorization() { return this.get('Authorization'); }
    setAuthorization(v, rw) { return this.set('Authorization', v, rw); }
    hasAuthorization() { return this.has('Authorization'); }
    getAccept() { return this.get('Accept'); }
    setAccept(v, rw) { return this.set('Accept', v, rw); }
    hasAccept() { return this.has('Accept'); }
    getContentLength() { return this.get('Content-Length'); }
    setContentLength(v, rw) { return this.set('Content-Length', v, rw); }
    hasContentLength() { return this.has('Content-Length'); }
    getAcceptEncoding() { return this.get('Accept-Encoding'); }
    setAcceptEncoding(v, rw) { return this.set('Accept-Encoding', v, rw); }
    hasAcceptEncoding() { return this.has('Accept-Encoding'); }
    getUserAgent() { return this.get('User-Agent'); }
    setUserAgent(v, rw) { return this.set('User-Agent', v, rw); }
    hasUserAgent() { return this.has('User-Agent'); }

    get [Symbol.toStringTag]() {
      return 'AxiosHeaders';
    }

    static from(thing) {
      return thing instanceof AxiosHeaders ? thing : new AxiosHeaders(thing);
    }

    static concat(first) {
      var computed = new AxiosHeaders(first);
      for (var i = 1; i < arguments.length; i++) computed.set(arguments[i]);
      return computed;
    }
  }

  class AxiosError extends Error {
    constructor(message, code, config, request, response) {
      super(message);
      this.name = 'AxiosError';
      this.code = code;
      this.config = config;
      this.request = request;
      this.response = response;
      this.isAxiosError = true;
    }

    toJSON() {
      return { message: this.message, name: this.name, code: this.code, status: this.response && this.response.status };
    }
  }

  class CanceledError extends AxiosError {
    constructor(message, config) {
      super(message == null ? 'canceled' : message, 'ERR_CANCELED', config);
      this.name = 'CanceledError';
      this.__CANCEL__ = true;
    }
  }

  class CancelToken {
    constructor(executor) {
      var token = this;
      this.reason = undefined;
      executor(function cancel(message) {
        if (!token.reason) token.reason = new CanceledError(message);
      });
    }

    throwIfRequested() {
      if (this.reason) throw this.reason;
    }

    static source() {
      var cancel;
      var token = new CancelToken(function (c) { cancel = c; });
      return { token: token, cancel: cancel };
    }
  }

  // ------------------------------------------------------------------ config merging (axios mergeConfig)

  function deepMerge(caseless, a, b) {
    var result = {};
    function assign(val, key) {
      var targetKey = (caseless && findKey(result, key)) || key;
      if (isPlainObject(result[targetKey]) && isPlainObject(val)) put(result, targetKey, deepMerge(false, result[targetKey], val));
      else if (isPlainObject(val)) put(result, targetKey, deepMerge(false, {}, val));
      else if (Array.isArray(val)) put(result, targetKey, val.slice());
      else put(result, targetKey, val);
    }
    [a, b].forEach(function (obj) {
      if (!isObject(obj)) return;
      Object.keys(obj).forEach(function (k) {
        if (k !== '__proto__' && k !== 'constructor' && k !== 'prototype') assign(obj[k], k);
      });
    });
    return result;
  }

  function mergedValue(target, source, caseless) {
    if (isPlainObject(target) && isPlainObject(source)) return deepMerge(caseless, target, source);
    if (isPlainObject(source)) return deepMerge(caseless, {}, source);
    if (Array.isArray(source)) return source.slice();
    return source;
  }

  var FROM_CONFIG2 = ['url', 'method', 'data'];
  var DEFAULT_TO_CONFIG2 = ['baseURL', 'transformRequest', 'transformResponse', 'paramsSerializer', 'timeout',
    'timeoutMessage', 'withCredentials', 'withXSRFToken', 'adapter', 'responseType', 'xsrfCookieName',
    'xsrfHeaderName', 'onUploadProgress', 'onDownloadProgress', 'decompress', 'maxContentLength',
    'maxBodyLength', 'beforeRedirect', 'transport', 'httpAgent', 'httpsAgent', 'cancelToken', 'socketPath',
    'responseEncoding', 'fetchOptions', 'allowAbsoluteUrls'];

  function headersToObject(h) {
    return h instanceof AxiosHeaders ? Object.assign({}, h) : h;
  }

  function mergeConfig(config1, config2) {
    config1 = config1 || {};
    config2 = config2 || {};
    var out = {};
    var keys = Object.keys(Object.assign({}, config1, config2));
    keys.forEach(function (prop) {
      var a = config1[prop];
      var b = config2[prop];
      var v;
      if (FROM_CONFIG2.indexOf(prop) !== -1) {
        if (b !== undefined) v = mergedValue(undefined, b);
      } else if (DEFAULT_TO_CONFIG2.indexOf(prop) !== -1) {
        if (b !== undefined) v = mergedValue(undefined, b);
        else if (a !== undefined) v = mergedValue(undefined, a);
      } else if (prop === 'headers') {
        var ha = headersToObject(a);
        var hb = headersToObject(b);
        if (hb !== undefined) v = mergedValue(ha, hb, true);
        else if (ha !== undefined) v = mergedValue(undefined, ha, true);
      } else if (prop === 'validateStatus') {
        v = prop in config2 ? b : a;
        put(out, prop, v);
        return;
      } else if (b !== undefined) v = mergedValue(a, b);
      else if (a !== undefined) v = mergedValue(undefined, a);
      if (v !== undefined) put(out, prop, v);
    });
    return out;
  }

  // ------------------------------------------------------------------ request bodies (axios transformRequest)

  // axios' isFormData: the web FormData, the `form-data` package, or anything with append()
  // whose tag or toString says FormData (not a plain object).
  function isFormDataLike(v) {
    if (!isObject(v)) return false;
    if (v instanceof FormData || v instanceof PackageFormData) return true;
    var proto = Object.getPrototypeOf(v);
    if (!proto || proto === Object.prototype || typeof v.append !== 'function') return false;
    var tag = Object.prototype.toString.call(v);
    return tag === '[object FormData]' || (tag === '[object Object]' && typeof v.toString === 'function' && v.toString() === '[object FormData]');
  }

  // The [name, value] pairs of a FormData of either kind.
  function formEntries(fd) {
    if (fd instanceof PackageFormData) return fd.fields();
    return typeof fd.entries === 'function' ? Array.from(fd.entries()) : null;
  }

  function isURLSearchParamsLike(v) {
    return v instanceof URLSearchParams || Object.prototype.toString.call(v) === '[object URLSearchParams]';
  }

  function isBinary(v) {
    return v instanceof ArrayBuffer || ArrayBuffer.isView(v);
  }

  function isVisitable(v) {
    return isPlainObject(v) || Array.isArray(v);
  }

  function removeBrackets(key) {
    return endsWith(key, '[]') ? key.slice(0, -2) : key;
  }

  function renderKey(path, key, dots) {
    if (!path) return key;
    return path.concat(key).map(function (token, i) {
      token = removeBrackets(String(token));
      return !dots && i ? '[' + token + ']' : token;
    }).join(dots ? '.' : '');
  }

  function convertFormValue(value) {
    if (value === null) return '';
    if (value instanceof Date) return value.toISOString();
    if (typeof value === 'boolean') return value.toString();
    return value;
  }

  // axios' toFormData visitor: nested objects -> a[b], flat arrays -> a[] (options: dots,
  // indexes, metaTokens, as axios' formSerializer / paramsSerializer take them).
  function visitForm(obj, append, options) {
    if (!isObject(obj)) throw new TypeError('data must be an object');
    var opt = function (name, fallback) {
      var v = isObject(options) ? options[name] : undefined;
      return v === undefined ? fallback : v;
    };
    var dots = opt('dots', false);
    var indexes = opt('indexes', false);
    var metaTokens = opt('metaTokens', true);
    var stack = [];
    function visitor(value, key, path) {
      var arr = value;
      if (value && !path && typeof value === 'object') {
        if (endsWith(key, '{}')) {
          key = metaTokens ? key : key.slice(0, -2);
          value = JSON.stringify(value);
        } else if ((Array.isArray(value) && !value.some(isVisitable)) || (endsWith(key, '[]') && (arr = Array.from(value)))) {
          key = removeBrackets(key);
          arr.forEach(function (el, index) {
            if (!(el === undefined || el === null)) {
              append(indexes === true ? renderKey([key], index, dots) : indexes === null ? key : key + '[]', convertFormValue(el));
            }
          });
          return false;
        }
      }
      if (isVisitable(value)) return true;
      append(renderKey(path, key, dots), convertFormValue(value));
      return false;
    }
    function build(value, path) {
      if (value === undefined) return;
      if (stack.indexOf(value) !== -1) throw new Error('Circular reference detected in ' + path.join('.'));
      stack.push(value);
      var keys = Array.isArray(value) ? value.map(function (_, i) { return i; }) : Object.keys(value);
      keys.forEach(function (key) {
        var el = value[key];
        if (el === undefined || el === null) return;
        if (visitor(el, typeof key === 'string' ? key.trim() : key, path) === true) {
          build(el, path ? path.concat(key) : [key]);
        }
      });
      stack.pop();
    }
    build(obj);
  }

  function formDataToJSON(fd) {
    // axios reads FormData through entries(): the `form-data` package has none (-> null)
    if (fd instanceof PackageFormData || typeof fd.entries !== 'function') return null;
    return entriesToObject(Array.from(fd.entries()));
  }

  function stringifySafely(raw) {
    if (typeof raw === 'string') {
      try {
        JSON.parse(raw);
        return raw.trim();
      } catch (e) {
        if (e.name !== 'SyntaxError') throw e;
      }
    }
    return JSON.stringify(raw);
  }

  function defaultTransformRequest(data, headers) {
    var contentType = headers.getContentType() || '';
    var hasJSON = contentType.indexOf('application/json') > -1;
    var objectPayload = isObject(data);
    if (isFormDataLike(data)) return hasJSON ? JSON.stringify(formDataToJSON(data)) : data;
    if (data instanceof Buffer || data instanceof ArrayBuffer) return data;
    if (ArrayBuffer.isView(data)) return data.buffer;
    if (isURLSearchParamsLike(data)) {
      headers.setContentType('application/x-www-form-urlencoded;charset=utf-8', false);
      return data.toString();
    }
    if (objectPayload) {
      if (contentType.indexOf('application/x-www-form-urlencoded') > -1) {
        var usp = new URLSearchParams();
        visitForm(data, function (k, v) { usp.append(k, v); });
        return usp.toString();
      }
      if (contentType.indexOf('multipart/form-data') > -1) {
        // axios' env.FormData under Node is the `form-data` package
        var fd = new PackageFormData();
        visitForm(data, function (k, v) { fd.append(k, v); });
        return fd;
      }
    }
    if (objectPayload || hasJSON) {
      headers.setContentType('application/json', false);
      return stringifySafely(data);
    }
    return data;
  }

  // ------------------------------------------------------------------ recording: bodies back to objects

  // "a[b][0]" -> ["a", "b", "0"]; "a[]" -> ["a", ""]
  function keyPath(key) {
    var m = /^([^[\]]*)((?:\[[^[\]]*\])+)$/.exec(key);
    if (!m || m[1] === '') return [key];
    var path = [m[1]];
    m[2].replace(/\[([^[\]]*)\]/g, function (_, seg) { path.push(seg); return ''; });
    return path;
  }

  function isIndex(seg) {
    return /^(0|[1-9]\d{0,8})$/.test(seg);
  }

  // Build with plain objects ("" segments append), then turn objects whose keys are
  // all indexes into arrays (sparse indexes are compacted, as qs does).
  function assignNested(root, key, value) {
    var path = keyPath(String(key));
    var node = root;
    for (var i = 0; i < path.length; i++) {
      var seg = path[i] === '' ? String(Object.keys(node).length) : path[i];
      if (i === path.length - 1) {
        if (hasOwn(node, seg)) {
          var prev = node[seg];
          put(node, seg, Array.isArray(prev) ? prev.concat([value]) : [prev, value]);
        } else put(node, seg, value);
        return;
      }
      var child = hasOwn(node, seg) ? node[seg] : undefined;
      if (Array.isArray(child)) child = Object.assign({}, child);
      if (!isObject(child)) child = {};
      put(node, seg, child);
      node = child;
    }
  }

  function arrayify(v) {
    if (Array.isArray(v)) return v.map(arrayify);
    if (!isObject(v)) return v;
    var keys = Object.keys(v);
    keys.forEach(function (k) { put(v, k, arrayify(v[k])); });
    if (keys.length && keys.every(isIndex)) {
      return keys.map(Number).sort(function (a, b) { return a - b; }).map(function (k) { return v[String(k)]; });
    }
    return v;
  }

  function entriesToObject(pairs) {
    var obj = {};
    pairs.forEach(function (p) { assignNested(obj, p[0], p[1]); });
    Object.keys(obj).forEach(function (k) { put(obj, k, arrayify(obj[k])); });
    return obj;
  }

  function parseFormBody(str) {
    return entriesToObject(parseQueryPairs(str));
  }

  var FORM_RE = /^[^\s=&]+(=[^\s&]*)?(&[^\s=&]+(=[^\s&]*)?)*&?$/;

  function decodeText(s, contentType) {
    var t = s.trim();
    if (t === '' || t === 'null') return {};
    if (t[0] === '{' || t[0] === '[' || contentType.indexOf('json') !== -1) {
      try {
        // a top-level array body stays an array; under a JSON media type a string, number or
        // boolean body too (axios JSON-encodes a string that is not JSON text: 'a' -> '"a"')
        return JSON.parse(t);
      } catch (e) { /* not JSON: fall through */ }
    }
    if (t.indexOf('=') !== -1 && FORM_RE.test(t) &&
      (contentType.indexOf('x-www-form-urlencoded') !== -1 || contentType === '')) {
      return parseFormBody(t);
    }
    return s;
  }

  function decodeBody(data, contentType) {
    contentType = String(contentType || '').toLowerCase();
    if (data === null) return {};
    if (typeof data === 'string') return decodeText(data, contentType);
    if (isFormDataLike(data)) return entriesToObject(formEntries(data) || []);
    var text = bytesToText(data);
    if (text !== null) return decodeText(text, contentType);
    return jsonClone(data);
  }

  // url -> {url, query}: baseURL joined, fragment dropped, query split off and decoded. The
  // path is kept as the code wrote it, never decoded: axios hands it to Node's http adapter
  // as is, so an encoded `/` in a path value (`%2F`, from encodeURIComponent) goes on the wire
  // and stays inside its segment. (Node's URL parser then also percent-encodes the characters
  // that cannot appear raw in a path: space, `"`, `<`, `>`, backtick, `{`, `}`, non-ASCII. That
  // step is left out here: it changes no segment nor any value a server decodes, and datasets
  // write their gold URLs with such characters raw, e.g. `/calendars/<calendarId>`.)
  function splitUrl(baseURL, url, wire) {
    var u = url == null ? '' : String(url);
    if (baseURL && !/^([a-z][a-z\d+\-.]*:)?\/\//i.test(u)) {
      var base = String(baseURL);
      u = u ? base.replace(/\/?\/$/, '') + '/' + u.replace(/^\/+/, '') : base;
    }
    // wire: a request's URL, as the WHATWG URL parser (Node's `new URL`, which axios' http
    // adapter uses before it appends `params`) reads it: leading and trailing C0 controls and
    // spaces removed, tabs and newlines anywhere removed (`'.../json? '` sends `/json?key=...`)
    if (wire) u = u.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '').replace(/[\t\n\r]/g, '');
    var hash = u.indexOf('#');
    if (hash !== -1) u = u.slice(0, hash);
    var full = u;
    var q = u.indexOf('?');
    var query = null;
    if (q !== -1) {
      var pairs = parseQueryPairs(u.slice(q + 1));
      u = u.slice(0, q);
      if (pairs.length) {
        query = {};
        pairs.forEach(function (p) {
          var value = p[2] ? p[1] : true;
          if (hasOwn(query, p[0])) {
            var prev = query[p[0]];
            put(query, p[0], Array.isArray(prev) ? prev.concat([value]) : [prev, value]);
          } else put(query, p[0], value);
        });
      }
    }
    return { url: resolveDotSegments(u), query: query, full: full };
  }

  // The path's `.` and `..` segments (also written `%2e`) resolved, as the WHATWG URL parser does
  // before axios sends the request (`/a/../b` goes out as `/b`); nothing else in the URL changes.
  function resolveDotSegments(u) {
    var m = /^([a-z][a-z\d+\-.]*:\/\/[^/]*)?(.*)$/i.exec(u);
    var head = m[1] || '';
    var path = m[2];
    if (!/\.|%2e/i.test(path)) return u;
    var segs = path.split('/');
    var out = [];
    for (var i = 0; i < segs.length; i++) {
      var last = i === segs.length - 1;
      if (isDotDotSegment(segs[i])) {
        if (out.length > 1 || (out.length === 1 && out[0] !== '')) out.pop();
        if (last) out.push('');
      } else if (isDotSegment(segs[i])) {
        if (last) out.push('');
      } else out.push(segs[i]);
    }
    var joined = out.join('/');
    if (path[0] === '/' && joined[0] !== '/') joined = '/' + joined;
    return head + joined;
  }

  function paramsToObject(params) {
    if (isURLSearchParamsLike(params)) {
      var obj = {};
      for (var pair of params.entries()) {
        if (hasOwn(obj, pair[0])) {
          var prev = obj[pair[0]];
          put(obj, pair[0], Array.isArray(prev) ? prev.concat([pair[1]]) : [prev, pair[1]]);
        } else put(obj, pair[0], pair[1]);
      }
      return obj;
    }
    if (typeof params === 'string') return splitUrl(null, '?' + params).query || {};
    var clone = jsonClone(params);
    return isObject(clone) ? clone : {};
  }

  // ------------------------------------------------------------------ the adapter's config (raw)

  // JSON.stringify's view of a value, as a logger of the config writes it.
  function jsonFacts(v) {
    try {
      var s = JSON.stringify(v);
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

  // The config as axios hands it to its adapter (what axios-mock-adapter's reply function gets),
  // reduced to the facts a logger of it can see: WAPIIBench's published mock.js logs this config
  // after its own changes (tracks/webapi/upstream_mock.py does those in Python).  Values are
  // JSON.stringify's view; `params` and `data` also say what kind of value they are, since
  // mock.js treats kinds differently (a URLSearchParams serializes as {}, a FormData is read from
  // the parts of the `form-data` package).
  function rawView(config) {
    var out = { method: config.method };
    var url = config.url;
    out.url = { type: typeName(url) };
    if (typeof url !== 'symbol') out.url.text = String(url);
    out.params = { present: hasOwn(config, 'params') };
    if (out.params.present) {
      var p = config.params;
      out.params.type = typeName(p);
      out.params.to_json = isObject(p) && typeof p.toJSON === 'function';
      Object.assign(out.params, jsonFacts(p));
    }
    var d = config.data;
    out.data = { type: typeName(d), falsy: !d };
    if (typeof d === 'string') out.data.text = d;
    else if (isObject(d)) {
      var ctor = d.constructor;
      out.data.ctor = ctor == null ? null : String(ctor.name);
      // a `form-data` object is read from its parts (its JSON is the package's internals)
      if (d instanceof PackageFormData) out.data.parts = d.parts().map(function (part) { return [part[0], jsonFacts(part[1])]; });
      else Object.assign(out.data, jsonFacts(d));
    } else if (d !== undefined) Object.assign(out.data, jsonFacts(d));
    out.headers = jsonFacts(config.headers).json;
    if (hasOwn(config, 'path_params')) out.path_params = jsonFacts(config.path_params);
    // the rest of the config as mock.js writes it (axios-mock-adapter deletes `adapter` first):
    // how long each request's log is decides which one a shared config file ends up holding
    var rest = {};
    Object.keys(config).forEach(function (k) {
      if (REWRITTEN_FIELDS.indexOf(k) === -1) put(rest, k, config[k]);
    });
    var facts = jsonFacts(rest);
    out.rest = facts.json;
    if (facts.json_error) out.json_error = facts.json_error;
    return out;
  }

  // ------------------------------------------------------------------ what goes on the wire (sent)

  var AXIOS_VERSION = '1.21.1';
  var REWRITTEN_FIELDS = ['url', 'params', 'data', 'headers', 'adapter'];
  var NO_BODY_METHODS = ['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT'];
  var FORM_BOUNDARY = 'axios-1.21.1-boundary-0000000000000000000000000';
  var ABSOLUTE_RE = /^([a-z][a-z\d+\-.]*:)?\/\//i;
  var MISSING_SLASHES_RE = /^https?:(?!\/\/)/i;
  var SPECIAL_PORTS = { 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443', 'ftp:': '21', 'file:': '' };

  // axios' buildURL encoding of query keys and values (encodeURIComponent, then : $ , and space back).
  function axiosEncode(val) {
    return encodeURIComponent(val).replace(/%3A/gi, ':').replace(/%24/g, '$').replace(/%2C/gi, ',').replace(/%20/g, '+');
  }

  // encodeURIComponent, with a lone surrogate written as U+FFFD (where the real one throws, the
  // WHATWG URL parser and TextEncoder replace).
  function utf8Percent(ch) {
    var bytes = utf8Encode(ch);
    var out = '';
    for (var i = 0; i < bytes.length; i++) out += '%' + (bytes[i] < 16 ? '0' : '') + bytes[i].toString(16).toUpperCase();
    return out;
  }

  function percentEncode(str, set) {
    var out = '';
    for (var i = 0; i < str.length; i++) {
      var c = str.charCodeAt(i);
      var ch = str[i];
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < str.length) {
        var d = str.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          out += utf8Percent(ch + str[i + 1]);
          i++;
          continue;
        }
      }
      if (c < 0x21 || c > 0x7e || set.indexOf(ch) !== -1) out += utf8Percent(ch);
      else out += ch;
    }
    return out;
  }

  var PATH_SET = '"#<>?`{}';
  var QUERY_SET = '"#<>\'';
  var USERINFO_SET = '"#<>?`{}/:;=@[\\]^|';

  function isDotSegment(seg) {
    return seg === '.' || seg.toLowerCase() === '%2e';
  }

  function isDotDotSegment(seg) {
    var s = seg.toLowerCase();
    return s === '..' || s === '.%2e' || s === '%2e.' || s === '%2e%2e';
  }

  // What the WHATWG URL parser (Node's `new URL`, which axios' http adapter uses) makes of an
  // absolute http(s) URL: host lowercased, default port dropped, `\` read as `/`, dot segments
  // (also `%2e`) removed, and the characters a path or a query cannot carry raw percent-encoded.
  // IDNA (non-ASCII host names) is not done.  Throws TypeError('Invalid URL') as Node does.
  function wireUrl(input) {
    var s = String(input).replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '').replace(/[\t\n\r]/g, '');
    var m = /^([a-zA-Z][a-zA-Z\d+.-]*):/.exec(s);
    if (!m) throw new TypeError('Invalid URL');
    var protocol = m[1].toLowerCase() + ':';
    var rest = s.slice(m[0].length);
    if (!hasOwn(SPECIAL_PORTS, protocol) || protocol === 'file:') return { protocol: protocol };
    rest = rest.replace(/^[/\\]*/, '');
    var end = rest.search(/[/\\?#]/);
    var authority = end === -1 ? rest : rest.slice(0, end);
    rest = end === -1 ? '' : rest.slice(end);
    var username = '';
    var password = '';
    var at = authority.lastIndexOf('@');
    if (at !== -1) {
      var info = authority.slice(0, at);
      authority = authority.slice(at + 1);
      var colon = info.indexOf(':');
      username = percentEncode(colon === -1 ? info : info.slice(0, colon), USERINFO_SET);
      password = colon === -1 ? '' : percentEncode(info.slice(colon + 1), USERINFO_SET);
    }
    var hm = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(authority);
    if (!hm) throw new TypeError('Invalid URL');
    var hostname = safeDecode(hm[1]).toLowerCase();
    if (!hostname || /[\u0000-\u0020#%/:<>?@[\\\]^|]/.test(hostname.replace(/^\[(.*)\]$/, 'x'))) throw new TypeError('Invalid URL');
    var port = hm[2] || '';
    if (port) {
      if (Number(port) > 65535) throw new TypeError('Invalid URL');
      port = String(Number(port));
      if (port === SPECIAL_PORTS[protocol]) port = '';
    }
    var hash = rest.indexOf('#');
    if (hash !== -1) rest = rest.slice(0, hash);
    var q = rest.indexOf('?');
    var query = q === -1 ? null : rest.slice(q + 1);
    var rawPath = q === -1 ? rest : rest.slice(0, q);
    var segs = rawPath === '' ? [] : rawPath.slice(1).split(/[/\\]/);
    var out = [];
    for (var i = 0; i < segs.length; i++) {
      var seg = segs[i];
      var last = i === segs.length - 1;
      if (isDotDotSegment(seg)) {
        out.pop();
        if (last) out.push('');
      } else if (isDotSegment(seg)) {
        if (last) out.push('');
      } else out.push(percentEncode(seg, PATH_SET));
    }
    var pathname = '/' + out.join('/');
    var search = query ? '?' + percentEncode(query, QUERY_SET) : '';
    var host = hostname + (port ? ':' + port : '');
    return {
      protocol: protocol, username: username, password: password, hostname: hostname, port: port,
      host: host, pathname: pathname, search: search
    };
  }

  // axios' buildURL: the params serialized (by the paramsSerializer, a URLSearchParams' own
  // toString, or axios' form-style encoding) and appended to the URL.
  function buildQueryURL(url, params, serializer) {
    if (!params) return url;
    var options = typeof serializer === 'function' ? { serialize: serializer } : serializer;
    var encode = isObject(options) && typeof options.encode === 'function' ? options.encode : axiosEncode;
    var serialize = isObject(options) && typeof options.serialize === 'function' ? options.serialize : null;
    var query;
    if (serialize) query = serialize(params, options);
    else if (isURLSearchParamsLike(params)) query = params.toString();
    else {
      var pairs = [];
      visitForm(params, function (k, v) { pairs.push([k, v]); }, options);
      query = pairs.map(function (pair) {
        var enc = function (x) { return encode === axiosEncode ? axiosEncode(x) : encode.call(null, x, formEncode); };
        return enc(pair[0]) + '=' + enc(pair[1]);
      }).join('&');
    }
    if (query) {
      var hashAt = url.indexOf('#');
      if (hashAt !== -1) url = url.slice(0, hashAt);
      url += (url.indexOf('?') === -1 ? '?' : '&') + query;
    }
    return url;
  }

  // A header value as Node's http client gets it from axios (bytes outside Latin-1 and
  // control characters dropped, surrounding blanks trimmed).
  function byteStringValue(v) {
    if (Array.isArray(v)) return v.map(byteStringValue);
    return String(v).replace(/[^\u0009\u0020-\u007e\u0080-\u00ff]+/g, '').replace(/^[ \t]+|[ \t]+$/g, '');
  }

  function multipartBody(form, boundary) {
    var out = '';
    var list = entriesOf(form);
    for (var i = 0; i < list.length; i++) {
      out += '--' + boundary + '\r\nContent-Disposition: form-data; name="' + escapeFormParam(list[i][0]) + '"\r\n\r\n' +
        String(list[i][1]).replace(/\r?\n|\r\n?/g, '\r\n') + '\r\n';
    }
    return out + '--' + boundary + '--\r\n';
  }

  // The request axios' Node http adapter would write for this config: method, URL, request
  // target (path and query as sent), headers (User-Agent, Accept-Encoding, Content-Length,
  // multipart boundaries and the Basic `Authorization` an `auth` option makes, replacing any
  // other) and the body as text.  Multipart boundaries are fixed placeholders (axios draws them
  // at random).  `error`: why the adapter would send nothing (it rejects instead).
  function sentView(config) {
    try {
      var url = config.url;
      var base = config.baseURL;
      if (typeof url === 'string' && MISSING_SLASHES_RE.test(url)) throw new Error('Invalid URL: missing "//" after protocol');
      var fullPath = url;
      if (base && (typeof url !== 'string' || !ABSOLUTE_RE.test(url) || config.allowAbsoluteUrls === false)) {
        if (typeof base === 'string' && MISSING_SLASHES_RE.test(base)) throw new Error('Invalid URL: missing "//" after protocol');
        var b = String(base).replace(/\/+$/, '');
        fullPath = url ? b + '/' + String(url).replace(/^\/+/, '') : String(base);
      }
      var parsed = wireUrl(fullPath);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('Unsupported protocol ' + parsed.protocol);
      var headers = new AxiosHeaders(config.headers).normalize();
      headers.set('User-Agent', 'axios/' + AXIOS_VERSION, false);
      var data = config.data;
      var body = null;
      if (data instanceof FormData) {
        var userBoundary = /boundary=([-_\w\d]{10,70})/i.exec(String(headers.getContentType() || ''));
        var boundary = userBoundary ? userBoundary[1] : FORM_BOUNDARY;
        body = multipartBody(data, boundary);
        headers.set({ 'Content-Type': 'multipart/form-data; boundary=' + boundary, 'Content-Length': String(utf8Encode(body).length) });
      } else if (data instanceof PackageFormData) {
        headers.set(data.getHeaders());
        body = data.getBody();
        if (!headers.has('Content-Length')) headers.set('Content-Length', String(utf8Encode(body).length));
      } else if (data) {
        if (typeof data === 'string') body = data;
        else if (isBinary(data)) body = bytesToText(data);
        else throw new Error('Data after transformation must be a string, an ArrayBuffer, a Buffer, or a Stream');
        headers.set('Content-Length', String(utf8Encode(body).length), false);
      }
      var auth = null;
      if (config.auth) auth = String(config.auth.username || '') + ':' + String(config.auth.password || '');
      if (!auth && (parsed.username || parsed.password)) auth = safeDecode(parsed.username) + ':' + safeDecode(parsed.password);
      if (auth) headers.delete('authorization');
      var target = buildQueryURL(parsed.pathname + parsed.search, config.params, config.paramsSerializer).replace(/^\?/, '');
      // Node's http client refuses a request target with characters it cannot send raw
      if (/[^\u0021-\u00ff]/.test(target)) throw new TypeError('Request path contains unescaped characters');
      // and writes `Content-Length: 0` for a method that may carry a body when there is none
      if (body === null && NO_BODY_METHODS.indexOf(String(config.method).toUpperCase()) === -1) headers.set('Content-Length', '0', false);
      headers.set('Accept-Encoding', 'gzip, compress, deflate, br', false);
      var sentHeaders = {};
      var json = headers.toJSON();
      Object.keys(json).forEach(function (k) { put(sentHeaders, k, byteStringValue(json[k])); });
      if (auth) put(sentHeaders, 'Authorization', 'Basic ' + base64Encode(utf8Encode(auth), 0, utf8Encode(auth).length, false));
      return {
        method: String(config.method).toUpperCase(),
        url: parsed.protocol + '//' + parsed.host + target,
        target: target,
        headers: sentHeaders,
        body: body
      };
    } catch (e) {
      return { error: describeError(e) };
    }
  }

  // ------------------------------------------------------------------ console

  function formatValue(v, depth) {
    if (typeof v === 'string') return depth ? JSON.stringify(v) : v;
    if (v === undefined) return 'undefined';
    if (typeof v === 'function') return '[Function: ' + (v.name || 'anonymous') + ']';
    if (typeof v === 'symbol' || typeof v === 'bigint') return String(v);
    if (v instanceof Error) return describeError(v);
    if (isObject(v)) {
      try {
        var s = JSON.stringify(v);
        if (s !== undefined) return s;
      } catch (e) { /* circular or throwing toJSON */ }
      return Object.prototype.toString.call(v);
    }
    return String(v);
  }

  function makeConsole(state) {
    function log() {
      if (state.closed) return;
      if (state.console.length >= state.maxConsole) {
        state.consoleDropped++;
        return;
      }
      var parts = [];
      for (var i = 0; i < arguments.length; i++) {
        try {
          parts.push(formatValue(arguments[i], 0));
        } catch (e) {
          parts.push('[unprintable]');
        }
      }
      var line = parts.join(' ');
      if (line.length > state.maxConsoleChars) line = line.slice(0, state.maxConsoleChars) + '...';
      state.console.push(line);
    }
    function noop() {}
    var c = {
      log: log, info: log, warn: log, error: log, debug: log, trace: log, dir: log, table: log,
      group: log, groupCollapsed: log, groupEnd: noop, time: noop, timeEnd: noop, timeLog: noop,
      count: noop, countReset: noop, clear: noop,
      assert: function (cond) {
        if (!cond) log.apply(null, ['Assertion failed'].concat(Array.prototype.slice.call(arguments, 1)));
      }
    };
    return c;
  }

  // ------------------------------------------------------------------ timers (virtual clock)

  // Timers never fire by themselves: the host drains them after the sample's
  // synchronous part and microtasks, earliest first, on a virtual clock, and
  // drops whatever is left when the sample ends.  Nothing can outlive a sample.
  class Timeout {
    constructor(id) {
      this._id = id;
    }

    ref() { return this; }
    unref() { return this; }
    hasRef() { return true; }
    refresh() { return this; }
    [Symbol.toPrimitive]() { return this._id; }
  }

  function makeTimers(state) {
    function schedule(fn, delay, args, repeat) {
      if (typeof fn !== 'function') throw new TypeError('The "callback" argument must be of type function');
      if (state.closed) return new Timeout(0);
      var ms = Math.max(1, Number(delay) || 0);
      var id = state.nextTimerId++;
      state.timers.push({ id: id, at: state.now + ms, seq: state.seq++, fn: fn, args: args, repeat: repeat ? ms : 0 });
      return new Timeout(id);
    }
    function clear(handle) {
      var id = handle instanceof Timeout ? handle._id : Number(handle);
      for (var i = state.timers.length - 1; i >= 0; i--) if (state.timers[i].id === id) state.timers.splice(i, 1);
    }
    return {
      setTimeout: function (fn, delay) { return schedule(fn, delay, Array.prototype.slice.call(arguments, 2), false); },
      setInterval: function (fn, delay) { return schedule(fn, delay, Array.prototype.slice.call(arguments, 2), true); },
      setImmediate: function (fn) { return schedule(fn, 0, Array.prototype.slice.call(arguments, 1), false); },
      clearTimeout: clear,
      clearInterval: clear,
      clearImmediate: clear
    };
  }

  // ------------------------------------------------------------------ axios

  function makeDefaults() {
    return {
      transitional: {
        silentJSONParsing: true, forcedJSONParsing: true, clarifyTimeoutError: false, legacyInterceptorReqResOrdering: true,
        advertiseZstdAcceptEncoding: false, validateStatusUndefinedResolves: true, encodeBasicAuthUsername: false
      },
      adapter: ['xhr', 'http', 'fetch'],
      transformRequest: [defaultTransformRequest],
      transformResponse: [function (data) { return data; }],
      timeout: 0,
      xsrfCookieName: 'XSRF-TOKEN',
      xsrfHeaderName: 'X-XSRF-TOKEN',
      maxContentLength: -1,
      maxBodyLength: -1,
      env: { FormData: FormData },
      validateStatus: function (status) { return status >= 200 && status < 300; },
      headers: {
        common: { Accept: ACCEPT_DEFAULT, 'Content-Type': undefined },
        delete: {}, get: {}, head: {}, post: {}, put: {}, patch: {}
      }
    };
  }

  class InterceptorManager {
    constructor() {
      this.handlers = [];
    }

    use(fulfilled, rejected, options) {
      this.handlers.push({
        fulfilled: fulfilled,
        rejected: rejected,
        synchronous: options ? !!options.synchronous : false,
        runWhen: options ? options.runWhen : null
      });
      return this.handlers.length - 1;
    }

    eject(id) {
      if (this.handlers[id]) this.handlers[id] = null;
    }

    clear() {
      this.handlers = [];
    }

    forEach(fn) {
      this.handlers.forEach(function (h) { if (h !== null) fn(h); });
    }
  }

  function makeAxios(state) {
    function record(config, syntax, marked) {
      if (state.exited || state.closed) return;
      if (state.requests.length >= state.maxRequests) {
        state.requestsDropped++;
        return;
      }
      var headers = config.headers;
      var target = splitUrl(config.baseURL, config.url, true);
      var rec = { method: config.method, url: target.url };
      var params = target.query;
      if (config.params != null) params = Object.assign(params || {}, paramsToObject(config.params));
      if (params) rec.params = params;
      rec.headers = headers.toJSON();
      if (config.data !== undefined) rec.data = decodeBody(config.data, headers.getContentType());
      rec.syntax = syntax;
      // the two views never cost the scored request: a value whose getters throw gives an error
      try {
        rec.raw = rawView(config);
      } catch (e) {
        rec.raw = { error: describeError(e) };
      }
      rec.sent = sentView(config);
      if (!rec.sent.error) {
        // What the server gets where the config does not say it: an `auth` option (or a URL's
        // user:password) becomes the Basic Authorization header, replacing any other, and a
        // custom paramsSerializer decides the query (read back from the query as sent).
        if (config.auth || /^[a-z][a-z\d+.-]*:\/\/[^/?#]*@/i.test(target.full)) {
          var authKey = findKey(rec.headers, 'authorization');
          if (authKey) delete rec.headers[authKey];
          rec.headers.Authorization = rec.sent.headers.Authorization;
        }
        if (config.paramsSerializer != null && config.params != null) {
          var q = rec.sent.target.indexOf('?');
          var sentQuery = splitUrl(null, q === -1 ? '' : rec.sent.target.slice(q)).query;
          if (sentQuery) rec.params = sentQuery;
          else delete rec.params;
        }
      }
      if (marked === true && state.markedIndex === -1) state.markedIndex = state.requests.length;
      // a request of the starter's own calls: the host tolerates it before the call's (popped there)
      if (marked === STARTER) rec.from_starter = true;
      state.requests.push(JSON.stringify(rec));
    }

    function dispatch(config, syntax, marked) {
      if (config.cancelToken && config.cancelToken.reason) throw config.cancelToken.reason;
      if (config.signal && config.signal.aborted) throw new CanceledError(null, config);
      config.headers = AxiosHeaders.from(config.headers);
      var fns = config.transformRequest;
      fns = typeof fns === 'function' ? [fns] : (Array.isArray(fns) ? fns : []);
      var data = config.data;
      for (var i = 0; i < fns.length; i++) {
        data = fns[i].call(config, data, config.headers.normalize());
      }
      config.headers.normalize();
      config.data = data;
      if (['post', 'put', 'patch'].indexOf(config.method) !== -1) {
        config.headers.setContentType('application/x-www-form-urlencoded', false);
      }
      record(config, syntax, marked);
      return Promise.resolve({ data: {}, status: 200, statusText: 'OK', headers: {}, config: config, request: {} });
    }

    // The arguments of the axios entry point `self`, `{ a: [...], marked }`.  When the last
    // one is the call token issued last (see createEnv's `armer`), it is spent here, before
    // anything the sample controls can run (only own slots of the arguments object are
    // read), and left out of `a`; the request is marked only if `self` was called straight
    // from the picked call: the stack below `self` must be the one `arm` saw, but for the
    // position of the call (no function of the code's own in between, no later call with a
    // kept token).
    function unmark(args, self) {
      var n = args.length;
      var token = state.token;
      var marked = false;
      if (state.starterToken !== null && n > 0 && args[n - 1] === state.starterToken) {
        // one of the starter's own calls (see `starterArm`): its request may precede the call's,
        // when `self` was called straight from that call
        state.starterToken = null;
        var below = {};
        captureStackTrace(below, self);
        var site = state.starterSite;
        state.starterSite = null;
        return { a: Array.prototype.slice.call(args, 0, n - 1), marked: site !== null && sameSite(site, below.stack) ? STARTER : false };
      }
      if (token !== null && n > 0 && args[n - 1] === token) {
        state.token = null;
        n -= 1;
        var holder = {};
        captureStackTrace(holder, self);
        var stack = holder.stack;
        for (var i = 0; i < state.site.length && !marked; i++) marked = state.site[i] === stack;
      }
      return { a: Array.prototype.slice.call(args, 0, n), marked: marked };
    }

    // An entry point other than the instance itself (`unmark` needs the function's identity;
    // a holder keeps its name as axios has it: none).
    function entryPoint(body) {
      var holder = {};
      holder.fn = function () {
        var u = unmark(arguments, holder.fn);
        return body(u.a, u.marked);
      };
      return holder.fn;
    }

    function request(ctx, configOrUrl, config, syntax, marked) {
      if (state.requests.length >= state.maxRequests || state.exited || state.closed) {
        // Past the cap (or after process.exit, or once the run is closed) requests never settle: a polling loop
        // such as `while (!done) await axios.get(...)` stalls instead of spinning.
        state.requestsDropped++;
        return new Promise(function () {});
      }
      if (typeof configOrUrl === 'string') {
        config = config || {};
        config.url = configOrUrl;
      } else {
        config = configOrUrl || {};
      }
      config = mergeConfig(ctx.defaults, config);
      if (typeof config.paramsSerializer === 'function') config.paramsSerializer = { serialize: config.paramsSerializer };
      if (config.allowAbsoluteUrls === undefined) {
        config.allowAbsoluteUrls = ctx.defaults.allowAbsoluteUrls !== undefined ? ctx.defaults.allowAbsoluteUrls : true;
      }
      config.method = String(config.method || ctx.defaults.method || 'get').toLowerCase();
      // axios 1.21: the `common` and per-method defaults are buckets (plain objects); a header
      // literally named like a method (`get: 'x'`) is a header
      var headers = config.headers;
      var isBucket = function (v) { return v == null || isPlainObject(v) || v instanceof AxiosHeaders; };
      var contextHeaders = headers && deepMerge(false, isBucket(headers.common) ? headers.common : undefined,
        isBucket(headers[config.method]) ? headers[config.method] : undefined);
      if (headers) {
        HEADER_BUCKETS.forEach(function (m) { if (isBucket(headers[m])) delete headers[m]; });
      }
      config.headers = AxiosHeaders.concat(contextHeaders, headers);

      var requestChain = [];
      var synchronous = true;
      ctx.interceptors.request.forEach(function (ic) {
        if (typeof ic.runWhen === 'function' && ic.runWhen(config) === false) return;
        synchronous = synchronous && ic.synchronous;
        requestChain.unshift(ic.fulfilled, ic.rejected);
      });
      var responseChain = [];
      ctx.interceptors.response.forEach(function (ic) { responseChain.push(ic.fulfilled, ic.rejected); });

      var promise;
      var i;
      if (!synchronous) {
        var chain = requestChain.concat([function (c) { return dispatch(c, syntax, marked); }, undefined], responseChain);
        promise = Promise.resolve(config);
        for (i = 0; i < chain.length; i += 2) promise = promise.then(chain[i], chain[i + 1]);
        return promise;
      }
      var newConfig = config;
      for (i = 0; i < requestChain.length; i += 2) {
        try {
          if (typeof requestChain[i] === 'function') newConfig = requestChain[i](newConfig);
        } catch (err) {
          if (typeof requestChain[i + 1] === 'function') requestChain[i + 1](err);
          break;
        }
      }
      try {
        promise = dispatch(newConfig, syntax, marked);
      } catch (err) {
        return Promise.reject(err);
      }
      for (i = 0; i < responseChain.length; i += 2) promise = promise.then(responseChain[i], responseChain[i + 1]);
      return promise;
    }

    function getUri(ctx, config) {
      config = mergeConfig(ctx.defaults, config);
      var target = splitUrl(config.baseURL, config.url);  // getUri parses no URL (buildURL only)
      var usp = new URLSearchParams();
      var params = Object.assign(target.query || {}, config.params ? paramsToObject(config.params) : {});
      visitForm(params, function (k, v) { usp.append(k, v); });
      var q = usp.toString();
      return target.url + (q ? '?' + q : '');
    }

    // axios 1.x entry points are async functions: whatever goes wrong before the request is
    // dispatched rejects the promise they return, and a rejection is recorded (WAPIIBench's
    // scorer runs code in which such a promise is never handled: Node then exits with an error).
    function settled(run) {
      var promise;
      try {
        promise = run();
      } catch (err) {
        promise = Promise.reject(err);
      }
      Promise.resolve(promise).then(undefined, function (e) {
        if (!state.closed && state.rejected.length < 20) state.rejected.push(describeError(e));
      });
      return promise;
    }

    function createInstance(defaultConfig, top) {
      var ctx = {
        defaults: defaultConfig,
        interceptors: { request: new InterceptorManager(), response: new InterceptorManager() }
      };
      // Every entry point takes (...args[, token]): see `unmark`.
      var instance = function axios() {
        var u = unmark(arguments, instance);
        var a = u.a;
        return settled(function () { return request(ctx, a[0], a[1], top ? 'config' : 'instance', u.marked); });
      };
      instance.request = entryPoint(function (a, marked) {
        return settled(function () { return request(ctx, a[0], a[1], top ? 'request' : 'instance', marked); });
      });
      var syntax = top ? 'method' : 'instance';
      METHODS_NO_DATA.forEach(function (m) {
        instance[m] = entryPoint(function (a, marked) {
          var url = a[0];
          var config = a[1];
          return settled(function () {
            return request(ctx, mergeConfig(config || {}, {
              method: m, url: url, data: config && hasOwn(config, 'data') ? config.data : undefined
            }), undefined, syntax, marked);
          });
        });
      });
      METHODS_WITH_DATA.forEach(function (m) {
        instance[m] = entryPoint(function (a, marked) {
          var url = a[0];
          var data = a[1];
          var config = a[2];
          return settled(function () {
            return request(ctx, mergeConfig(config || {}, { method: m, headers: {}, url: url, data: data }), undefined, syntax, marked);
          });
        });
        if (m === 'query') return; // no queryForm: a QUERY carries no form
        instance[m + 'Form'] = entryPoint(function (a, marked) {
          var url = a[0];
          var data = a[1];
          var config = a[2];
          return settled(function () {
            return request(ctx, mergeConfig(config || {}, {
              method: m, headers: { 'Content-Type': 'multipart/form-data' }, url: url, data: data
            }), undefined, syntax, marked);
          });
        });
      });
      instance.getUri = function (config) { return getUri(ctx, config); };
      instance.defaults = ctx.defaults;
      instance.interceptors = ctx.interceptors;
      instance.create = function (instanceConfig) {
        return createInstance(mergeConfig(defaultConfig, instanceConfig), false);
      };
      return instance;
    }

    var axios = createInstance(makeDefaults(), true);
    axios.Axios = function Axios() { throw new Error('new axios.Axios() is not supported by the stand-in'); };
    axios.AxiosError = AxiosError;
    axios.CanceledError = CanceledError;
    axios.Cancel = CanceledError;
    axios.CancelToken = CancelToken;
    axios.AxiosHeaders = AxiosHeaders;
    axios.isCancel = function (v) { return !!(v && v.__CANCEL__); };
    axios.isAxiosError = function (v) { return isObject(v) && v.isAxiosError === true; };
    axios.VERSION = AXIOS_VERSION;
    axios.all = function (promises) { return Promise.all(promises); };
    axios.spread = function (cb) { return function (arr) { return cb.apply(null, arr); }; };
    axios.toFormData = function (obj, fd) {
      fd = fd || new FormData();
      visitForm(obj, function (k, v) { fd.append(k, v); });
      return fd;
    };
    axios.formToJSON = function (fd) { return formDataToJSON(fd); };
    axios.mergeConfig = mergeConfig;
    axios.HttpStatusCode = { Ok: 200, Created: 201, NoContent: 204, BadRequest: 400, Unauthorized: 401, Forbidden: 403, NotFound: 404 };
    axios.default = axios;
    return axios;
  }

  // ------------------------------------------------------------------ require / process

  // ------------------------------------------------------------------ inert stand-ins

  // Processes are refused: requiring child_process ends the sample.  The file system is a model
  // of its own (`FS`, below): empty and read-only, no host file ever.  Every other module
  // (express, ws, lodash, './config', ...) gets an inert stand-in.
  var REFUSED_MODULES = ['child_process'];

  // ------------------------------------------------------------------ the virtual file system

  // `require('fs')` / 'fs/promises': an empty, read-only file system, shared by all samples and
  // frozen with the rest.  Every read fails as Node's does for a missing file (ENOENT: code that
  // reads a config file takes its own fallback, or stops as it would where the file is missing),
  // every write is refused (EROFS), existsSync is false; callbacks get the error asynchronously,
  // the promise API rejects with it, streams emit it.  Nothing here touches the host: there is no
  // host file system in the V8 isolate at all.
  var FS_ERRORS = { ENOENT: [-2, 'no such file or directory'], EROFS: [-30, 'read-only file system'] };
  function fsError(code, syscall, path) {
    var shown = typeof path === 'string' ? path : String(path);
    var e = new Error(code + ': ' + FS_ERRORS[code][1] + ', ' + syscall + " '" + shown + "'");
    e.errno = FS_ERRORS[code][0];
    e.code = code;
    e.syscall = syscall;
    e.path = shown;
    return e;
  }
  // name -> [error code, syscall]
  var FS_CALLS = {
    readFile: ['ENOENT', 'open'], stat: ['ENOENT', 'stat'], lstat: ['ENOENT', 'lstat'],
    readdir: ['ENOENT', 'scandir'], access: ['ENOENT', 'access'], open: ['ENOENT', 'open'],
    realpath: ['ENOENT', 'realpath'], readlink: ['ENOENT', 'readlink'], opendir: ['ENOENT', 'opendir'],
    statfs: ['ENOENT', 'statfs'], watch: ['ENOENT', 'watch'],
    writeFile: ['EROFS', 'open'], appendFile: ['EROFS', 'open'], mkdir: ['EROFS', 'mkdir'],
    mkdtemp: ['EROFS', 'mkdtemp'], rm: ['EROFS', 'rm'], rmdir: ['EROFS', 'rmdir'], unlink: ['EROFS', 'unlink'],
    rename: ['EROFS', 'rename'], copyFile: ['EROFS', 'copyfile'], cp: ['EROFS', 'cp'], symlink: ['EROFS', 'symlink'],
    link: ['EROFS', 'link'], chmod: ['EROFS', 'chmod'], chown: ['EROFS', 'chown'], truncate: ['EROFS', 'open'],
    utimes: ['EROFS', 'utime']
  };
  function fsStream(code, syscall) {
    return function (path) {
      var err = fsError(code, syscall, path);
      var stream = {
        on: function (event, fn) {
          if (event === 'error' && typeof fn === 'function') Promise.resolve().then(function () { fn(err); });
          return stream;
        },
        pipe: function (dest) { return dest; },
        write: function () { return false; },
        end: function () { return stream; },
        close: function (cb) { if (typeof cb === 'function') Promise.resolve().then(function () { cb(); }); },
        destroy: function () { return stream; }
      };
      stream.once = stream.on;
      stream.addListener = stream.on;
      return stream;
    };
  }
  var FS = (function () {
    var fs = { promises: {}, constants: { F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1 } };
    Object.keys(FS_CALLS).forEach(function (name) {
      var code = FS_CALLS[name][0];
      var syscall = FS_CALLS[name][1];
      fs[name + 'Sync'] = function (path) { throw fsError(code, syscall, path); };
      fs[name] = function (path) {
        var cb = arguments[arguments.length - 1];
        var err = fsError(code, syscall, path);
        if (typeof cb !== 'function') throw new TypeError('The "cb" argument must be of type function');
        Promise.resolve().then(function () { cb(err); });
      };
      fs.promises[name] = function (path) { return Promise.reject(fsError(code, syscall, path)); };
    });
    fs.existsSync = function () { return false; };
    fs.exists = function (path, cb) { if (typeof cb === 'function') Promise.resolve().then(function () { cb(false); }); };
    fs.createReadStream = fsStream('ENOENT', 'open');
    fs.createWriteStream = fsStream('EROFS', 'open');
    fs.promises.constants = fs.constants;
    return fs;
  })();

  // As a string a stand-in reads '0' (JSON.parse accepts it, a URL stays a URL), as a number 0.
  function stubToPrimitive(hint) { return hint === 'number' ? 0 : '0'; }
  function stubToString() { return '0'; }

  // Per sample: inert stand-ins (for modules the sample requires, and for the arguments of
  // callbacks the sandbox invokes itself) and the runtime helper the extractor's rewrites call
  // (`__callbench_rt`: defer / fillClass / fillMethod, see js_extract).  A stand-in never
  // throws: calling, constructing, reading any property, chaining, awaiting, iterating (one
  // stand-in) and converting it to a string ('0') or number (0) all work and record nothing.
  // Awaiting one (it is a thenable) gives a stand-in that is not thenable, so `await` does
  // not loop.
  function makeStubs(state, scope) {
    function make(thenable) {
      return new Proxy(function () {}, thenable ? thenableHandler : plainHandler);
    }
    // Iterating a stand-in gives one stand-in, so `for (const row of await db.query(...))`
    // reaches a call inside the loop.
    function iterator() {
      var done = false;
      return {
        next: function () {
          if (done) return { done: true, value: undefined };
          done = true;
          return { done: false, value: make(true) };
        },
        return: function () {
          done = true;
          return { done: true, value: undefined };
        }
      };
    }
    function asyncIterator() {
      var it = iterator();
      return {
        next: function () { return Promise.resolve(it.next()); },
        return: function () { return Promise.resolve(it.return()); }
      };
    }
    function then(onFulfilled, onRejected) {
      return Promise.resolve(make(false)).then(onFulfilled, onRejected);
    }
    function handler(thenable) {
      return {
        get: function (target, key) {
          if (typeof key === 'symbol') {
            if (key === Symbol.toPrimitive) return stubToPrimitive;
            if (key === Symbol.iterator) return iterator;
            if (key === Symbol.asyncIterator) return asyncIterator;
            return undefined;
          }
          if (key === 'then') return thenable ? then : undefined;
          if (key === 'toString' || key === 'toLocaleString') return stubToString;
          if (key === 'toJSON') return undefined;
          return make(true);
        },
        set: function () { return true; },
        deleteProperty: function () { return true; },
        apply: function () { return make(true); },
        construct: function () { return make(true); }
      };
    }
    var thenableHandler = handler(true);
    var plainHandler = handler(false);

    // The request of an Express/Koa handler the sandbox calls (`req`, `ctx`): its params, query,
    // body and headers answer from the variables in scope of the same name (`req.body.hashtag`
    // is `hashtag`), anything else they are asked is an inert stand-in; `req.get(name)` and
    // `req.header(name)` read the same way; everything else about it is an inert stand-in.
    function fromScope(key) {
      return isObject(scope) && typeof key === 'string' && hasOwn(scope, key) ? scope[key] : make(true);
    }
    function scopeBag() {
      var bag = {};
      if (isObject(scope)) Object.keys(scope).forEach(function (k) { put(bag, k, scope[k]); });
      return new Proxy(bag, {
        get: function (target, key) {
          if (typeof key === 'symbol' || key === 'then' || key === 'toJSON') return target[key];
          return hasOwn(target, key) ? target[key] : make(true);
        }
      });
    }
    var REQUEST_PARTS = ['params', 'query', 'body', 'headers'];
    function requestStub() {
      var parts = {};
      return new Proxy(function () {}, {
        get: function (target, key) {
          if (typeof key === 'string' && REQUEST_PARTS.indexOf(key) !== -1) {
            if (!hasOwn(parts, key)) put(parts, key, scopeBag());
            return parts[key];
          }
          if (key === 'request') return requestStub();
          if (key === 'get' || key === 'header') return function (name) { return fromScope(String(name)); };
          return plainHandler.get(target, key);
        },
        set: function () { return true; },
        deleteProperty: function () { return true; },
        apply: function () { return make(true); },
        construct: function () { return make(true); }
      });
    }

    // Arguments for a function the sandbox calls: the caller's own where given, else by the
    // spec letter: 'v' the value of the same name in scope (from `values`), else a stand-in;
    // 's' a stand-in; 'n' null (an error-first callback's error); 'u' undefined (defaults).
    function fill(args, spec, values) {
      var out = Array.prototype.slice.call(args);
      if (!spec || out.length >= spec.length) return out;
      var vals = [];
      if (typeof values === 'function') {
        try {
          vals = values() || [];
        } catch (e) {
          vals = []; // a name in its temporal dead zone
        }
      }
      for (var i = out.length; i < spec.length; i++) {
        var c = spec.charAt(i);
        if (c === 'n') out.push(null);
        else if (c === 'u') out.push(undefined);
        else if (c === 'd') out.push(vals[i]);
        else if ((c === 'v' || c === 'r') && vals[i] !== undefined) out.push(vals[i]);
        else if (c === 'r') out.push(requestStub());
        else out.push(make(true));
      }
      return out;
    }

    var rt = {
      stub: function () { return make(true); },
      // `this` of the call run alone (js_extract `_call_alone`): answers from the variables in scope
      scope: function () { return scopeBag(); },
      inScope: function (name) { return isObject(scope) && hasOwn(scope, String(name)); },
      // A function on the way to the marked call: returned wrapped (missing arguments are
      // filled), and called once more at the end of the run (after timers) if nothing did.
      defer: function (fn, spec, values) {
        if (typeof fn !== 'function' || state.closed) return fn;
        var entry = { fn: null, called: false };
        var wrapped = function () {
          entry.called = true;
          var a = fill(arguments, spec, values);
          if (new.target) return Reflect.construct(fn, a, new.target);
          return fn.apply(this, a);
        };
        entry.fn = wrapped;
        try {
          Object.defineProperty(wrapped, 'length', { value: fn.length });
          Object.defineProperty(wrapped, 'name', { value: fn.name });
        } catch (e) { /* keep the wrapper's own */ }
        if (state.deferred.length < 1000) state.deferred.push(entry);
        return wrapped;
      },
      // An object literal with a method on the way to the marked call (a factory's
      // `return { balance(address) { ... } }`): the method is wrapped like `defer`'s functions
      // (missing arguments filled) and called on the object at the end of the run if nothing did.
      deferMethod: function (obj, name, spec, values) {
        if (obj === null || typeof obj !== 'object' || state.closed) return obj;
        var d = Object.getOwnPropertyDescriptor(obj, name);
        if (!d || typeof d.value !== 'function' || !d.writable) return obj;
        var orig = d.value;
        var entry = { fn: null, called: false };
        var wrapped = function () {
          entry.called = true;
          return orig.apply(this, fill(arguments, spec, values));
        };
        entry.fn = function () { return wrapped.call(obj); };
        try {
          Object.defineProperty(wrapped, 'length', { value: orig.length });
          Object.defineProperty(wrapped, 'name', { value: orig.name });
          Object.defineProperty(obj, name, { value: wrapped, writable: true, enumerable: d.enumerable, configurable: true });
        } catch (e) {
          return obj; // a frozen or sealed object: left as it is
        }
        if (state.deferred.length < 1000) state.deferred.push(entry);
        return obj;
      },
      fillClass: function (cls, spec, values) {
        if (typeof cls !== 'function') return cls;
        return new Proxy(cls, {
          construct: function (target, args, newTarget) {
            return Reflect.construct(target, fill(args, spec, values), newTarget);
          }
        });
      },
      fillMethod: function (owner, name, spec, values) {
        var orig = owner === null || owner === undefined ? undefined : owner[name];
        if (typeof orig !== 'function') return;
        Object.defineProperty(owner, name, {
          value: function () { return orig.apply(this, fill(arguments, spec, values)); },
          writable: true, enumerable: false, configurable: true
        });
      }
    };
    Object.freeze(rt);
    return {
      rt: rt,
      module: function () { return make(true); },
      // Call the first deferred function nothing called; false when there is none left.
      fireNextDeferred: function () {
        if (state.closed || state.exited || state.timerError !== null) return false;
        for (var i = 0; i < state.deferred.length; i++) {
          var entry = state.deferred[i];
          if (entry.called) continue;
          try {
            var ret = entry.fn();
            if (ret !== null && typeof ret === 'object' && typeof ret.then === 'function') {
              Promise.resolve(ret).then(undefined, function (e) {
                if (!state.closed && state.timerError === null && !state.requests.length) state.timerError = describeError(e);
              });
            }
          } catch (e) {
            state.timerError = describeError(e);
          }
          return true;
        }
        return false;
      }
    };
  }

  function makeRequire(axios, moduleObj, stubs) {
    function require(name) {
      var n = String(name);
      if (n === 'axios' || n.slice(0, 6) === 'axios/') return axios;
      if (n === 'form-data') return PackageFormData;
      var bare = n.slice(0, 5) === 'node:' ? n.slice(5) : n;
      if (bare === 'fs') return FS;
      if (bare === 'fs/promises') return FS.promises;
      if (REFUSED_MODULES.indexOf(bare) !== -1) throw new Error("require('" + n + "') is not allowed in the sandbox");
      return stubs.module(n);
    }
    require.resolve = function (name) { throw new Error("require.resolve('" + String(name) + "') is not allowed in the sandbox"); };
    require.cache = {};
    require.main = moduleObj;
    return require;
  }

  // process.env answers from the variables in scope (the definitions): `process.env.API_KEY`,
  // `const { API_KEY } = process.env`; as in Node, every value is a string.
  function envFrom(scope) {
    var env = {};
    if (isObject(scope)) {
      Object.keys(scope).forEach(function (k) {
        var v = scope[k];
        if (typeof v === 'string') put(env, k, v);
        else if (typeof v === 'number' || typeof v === 'boolean') put(env, k, String(v));
      });
    }
    return env;
  }

  function makeProcess(state, consoleObj, scope) {
    var process = {
      env: envFrom(scope),
      argv: ['/usr/local/bin/node', '/sandbox/index.js'],
      argv0: 'node',
      execArgv: [],
      platform: 'linux',
      arch: 'x64',
      pid: 4242,
      version: 'v20.0.0',
      versions: { node: '20.0.0' },
      release: { name: 'node' },
      exitCode: undefined,
      stdout: { write: function (s) { consoleObj.log(String(s).replace(/\n$/, '')); return true; }, isTTY: false },
      stderr: { write: function (s) { consoleObj.error(String(s).replace(/\n$/, '')); return true; }, isTTY: false },
      cwd: function () { return '/sandbox'; },
      uptime: function () { return state.now / 1000; },
      hrtime: function () { return [0, 0]; },
      memoryUsage: function () { return { rss: 0, heapTotal: 0, heapUsed: 0, external: 0 }; },
      nextTick: function (fn) {
        var args = Array.prototype.slice.call(arguments, 1);
        Promise.resolve().then(function () { fn.apply(null, args); });
      },
      emitWarning: function () {},
      on: function () { return process; },
      once: function () { return process; },
      off: function () { return process; },
      removeListener: function () { return process; },
      removeAllListeners: function () { return process; },
      listeners: function () { return []; },
      exit: function (code) {
        var c = code === undefined ? (process.exitCode || 0) : code;
        state.exited = { code: c };
        throw new Error('process.exit(' + String(c) + ') called: the sample ended');
      },
      abort: function () {
        state.exited = { code: 134 };
        throw new Error('process.abort() called: the sample ended');
      },
      kill: function () { throw new Error('process.kill() is not allowed in the sandbox'); }
    };
    process.hrtime.bigint = function () { return BigInt(0); };
    return process;
  }

  // ------------------------------------------------------------------ environment factory

  // scope: the definitions (name -> value) of the sample, or null
  function createEnv(options, scope) {
    options = options || {};
    var state = {
      requests: [],
      requestsDropped: 0,
      console: [],
      consoleDropped: 0,
      maxConsole: options.maxConsole || 200,
      maxConsoleChars: options.maxConsoleChars || 2000,
      maxRequests: options.maxRequests || 100,
      exited: null,
      timerError: null,
      timers: [],
      now: 0,
      seq: 0,
      nextTimerId: 1,
      closed: false,
      deferred: [],
      token: null, // the call token issued last and not yet spent (see `armer` below)
      starterToken: null, // the token a starter's own call made last (see `starterArm` below)
      starterSite: null, // the stack below `starterArm` when it made that token
      site: [], // the stacks an entry point may see below itself to mark a request with it
      markedIndex: -1,
      rejected: []
    };
    var consoleObj = makeConsole(state);
    var axios = makeAxios(state);
    var moduleObj = { id: '.', filename: '/sandbox/index.js', loaded: false, children: [], paths: [], exports: {} };
    var stubs = makeStubs(state, scope);
    var require = makeRequire(axios, moduleObj, stubs);
    var timers = makeTimers(state);
    var process = makeProcess(state, consoleObj, scope);
    var bindings = {
      axios: axios,
      require: require,
      module: moduleObj,
      exports: moduleObj.exports,
      console: consoleObj,
      process: process,
      FormData: FormData,
      URLSearchParams: URLSearchParams,
      URL: URL,
      AbortController: AbortController,
      AbortSignal: AbortSignal,
      Buffer: Buffer,
      btoa: btoa,
      atob: atob,
      setTimeout: timers.setTimeout,
      clearTimeout: timers.clearTimeout,
      setInterval: timers.setInterval,
      clearInterval: timers.clearInterval,
      setImmediate: timers.setImmediate,
      clearImmediate: timers.clearImmediate,
      global: globalThis,
      __dirname: '/sandbox',
      __filename: '/sandbox/index.js',
      __callbench_rt: stubs.rt
    };
    var recorder = {
      // The run is over: nothing the sample left behind may record or log any more.
      close: function () {
        state.closed = true;
        state.timers.length = 0;
        state.deferred.length = 0;
      },
      // Call a deferred callback nothing invoked (see makeStubs); false when none is left.
      fireNextDeferred: function () {
        return stubs.fireNextDeferred();
      },
      // Fire the earliest timer; returns how many are still pending.
      fireNextTimer: function () {
        if (state.exited || state.timerError !== null) state.timers.length = 0;
        if (!state.timers.length) return 0;
        var best = 0;
        for (var i = 1; i < state.timers.length; i++) {
          var t = state.timers[i];
          var b = state.timers[best];
          if (t.at < b.at || (t.at === b.at && t.seq < b.seq)) best = i;
        }
        var timer = state.timers[best];
        state.timers.splice(best, 1);
        state.now = timer.at;
        if (timer.repeat) {
          state.timers.push({ id: timer.id, at: state.now + timer.repeat, seq: state.seq++, fn: timer.fn, args: timer.args, repeat: timer.repeat });
        }
        try {
          timer.fn.apply(undefined, timer.args);
        } catch (e) {
          state.timerError = describeError(e);
          state.timers.length = 0;
        }
        return state.timers.length;
      },
      pendingTimers: function () {
        return state.exited || state.timerError !== null ? 0 : state.timers.length;
      },
      // Everything the host needs, as JSON text (requests were snapshotted as JSON at call time).
      resultJSON: function (mainError, settled) {
        var error = mainError || state.timerError;
        if (state.exited && !error) error = 'process.exit(' + String(state.exited.code) + ') called: the sample ended';
        return '{"requests":[' + state.requests.join(',') + '],"console":' + JSON.stringify(state.console) +
          ',"error":' + JSON.stringify(error || null) + ',"exited":' + (state.exited ? 'true' : 'false') +
          ',"settled":' + (settled ? 'true' : 'false') + ',"requests_dropped":' + state.requestsDropped +
          ',"console_dropped":' + state.consoleDropped + ',"marked":' + state.markedIndex +
          ',"rejected":' + JSON.stringify(state.rejected) + '}';
      }
    };
    // `armer(atArm, atCalls)` makes the picked call's `arm`: the call passes `arm()` as its
    // last argument, so each time the call runs, `arm` runs right after its other arguments.
    // It issues a fresh token (an object nothing else holds; issuing one revokes the one
    // before) and saves the stack below itself with the position of the `arm()` call
    // (`atArm`, ':line:column') replaced by each position V8 may report for the call itself
    // (`atCalls`, tokens of that call alone): what an entry point called straight from that
    // call sees below itself.  Stack text is
    // compared whole, and a stack of `Error.stackTraceLimit` frames or more is never matched
    // (a cut stack could hide a frame: functions may be named anything, newlines included,
    // but each frame adds at least one "\n    at ").
    function armer(atArm, atCalls) {
      var arm = function () {
        var holder = {};
        captureStackTrace(holder, arm);
        var stack = holder.stack;
        var site = [];
        var limit = Error.stackTraceLimit;
        if (typeof stack === 'string' && typeof limit === 'number' && stack.split('\n    at ').length - 1 < limit) {
          var from = 0;
          var at;
          while ((at = stack.indexOf(atArm, from)) !== -1) {
            var next = stack.charAt(at + atArm.length);
            if (next === ')' || next === '\n' || next === '') {
              for (var k = 0; k < atCalls.length; k++) {
                site.push(stack.slice(0, at) + atCalls[k] + stack.slice(at + atArm.length));
              }
            }
            from = at + 1;
          }
        }
        var token = {};
        state.token = token;
        state.site = site;
        return token;
      };
      return arm;
    }
    // `starterArm` is what a task starter's own axios calls pass as their last argument (the
    // harness binds it to a random name, like `arm`): the run's starter token, which marks their
    // requests as the starter's.  Only those may come before the answer's call (js.py, call_from);
    // a request the answer sends first another way is not the starter's.
    function starterArm() {
      var holder = {};
      captureStackTrace(holder, starterArm);
      var token = {};
      state.starterToken = token;
      state.starterSite = holder.stack;
      return token;
    }
    return { bindings: bindings, recorder: recorder, describeError: describeError, armer: armer, starterArm: starterArm };
  }

  createEnv.bindingNames = [
    'axios', 'require', 'module', 'exports', 'console', 'process', 'FormData', 'URLSearchParams', 'URL',
    'AbortController', 'AbortSignal', 'Buffer', 'btoa', 'atob', 'setTimeout', 'clearTimeout', 'setInterval',
    'clearInterval', 'setImmediate', 'clearImmediate', 'global', '__dirname', '__filename', '__callbench_rt'
  ];

  // Everything defined once and shared by all samples.  Listed so that the sandbox
  // lockdown, which walks properties from globalThis, also reaches (and freezes)
  // what is otherwise only held by closures (classes, helpers, constant tables).
  createEnv.shared = [
    isObject, isPlainObject, put, hasOwn, endsWith, safeDecode,
    formDecode, formEncode, jsonClone, findKey, describeError, utf8Encode,
    utf8Decode, base64Encode, base64Decode, encodeString, decodeBytes, Buffer,
    btoa, atob, bytesToText, pairIterator, entriesOf, initEntries,
    PairList, FormData, parseQueryPairs, URLSearchParams, removeDotSegments, URL,
    AbortSignal, AbortController, normalizeHeaderValue, normalizeHeaderName, AxiosHeaders, AxiosError,
    CanceledError, CancelToken, deepMerge, mergedValue, headersToObject, mergeConfig,
    isFormDataLike, isURLSearchParamsLike, isBinary, isVisitable, removeBrackets, renderKey,
    convertFormValue, visitForm, formDataToJSON, stringifySafely, defaultTransformRequest, keyPath,
    isIndex, assignNested, arrayify, entriesToObject, parseFormBody, decodeText,
    decodeBody, splitUrl, paramsToObject, formatValue, makeConsole, Timeout,
    makeTimers, makeDefaults, InterceptorManager, makeAxios, makeRequire, makeProcess, makeStubs,
    stubToPrimitive, stubToString, REFUSED_MODULES, FS, FS_ERRORS, FS_CALLS, fsError, fsStream, envFrom, PackageFormData, escapeFormParam, partText, jsonFacts,
    typeName, rawView, axiosEncode, utf8Percent, percentEncode, isDotSegment, isDotDotSegment, wireUrl,
    buildQueryURL, byteStringValue, multipartBody, sentView, SPECIAL_PORTS, resolveDotSegments,
    createEnv,
    METHODS_NO_DATA, METHODS_WITH_DATA, ENTRIES, DEFAULT_PORTS, FROM_CONFIG2, DEFAULT_TO_CONFIG2, URL_RE, FORM_RE,
    ABSOLUTE_RE, MISSING_SLASHES_RE, HEADER_BUCKETS, NO_BODY_METHODS, formEntries, headerSlot, REWRITTEN_FIELDS
  ];
  return createEnv;
})();
