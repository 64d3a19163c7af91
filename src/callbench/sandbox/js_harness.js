/*
 * callbench sandbox harness (ES2020): the per-sample runner and the one-time lockdown.
 * Needs axios_standin.js evaluated first.
 *
 * Runner protocol (the host calls these from outside, one eval each):
 *   start(code, defs, skip, options, mark)  compile `code` as the body of a fresh async
 *       function (sloppy, as Node runs CommonJS, unless the code opens with a 'use strict'
 *       directive; `this` is module.exports) whose parameters are the stand-in bindings plus `defs` (minus
 *       names in `skip`, which the code declares itself), and call it.  When `mark` is
 *       'name:armAt:callAt...', the host has put `name()` as the last argument of the call
 *       it picked (`armAt`: where `name` starts in `code`, each `callAt`: where V8 may place
 *       that call in a stack trace, all in UTF-16 units), and the function is made inside a closure that binds
 *       `name` to the run's `arm` (see the stand-in's `armer`).  The name is no parameter
 *       of the sample's function, so neither `arguments` nor anything the sample is handed
 *       holds `arm`; the code can reach it only by writing its random name, and reading the
 *       name from its own source does not help: the lockdown leaves no direct eval.
 *   settle()  -> number while timers are pending or a deferred callback is left (one was
 *       just fired or called: call again after the microtasks ran), else the final result
 *       as JSON text.
 *   finish()  -> final JSON now, dropping pending timers.
 * The host must let microtasks drain between these calls (every mini_racer eval does):
 * the result is only ever taken in a later eval than the one that ran sample code, so
 * every promise job the sample queued has run by then, and once the result is taken the
 * run is closed (its stand-in records nothing more).
 *
 * Lockdown (sandbox only, not under node): __callbenchLockdown(options) removes the
 * host APIs that could run code after a sample ends (timers, Atomics.waitAsync,
 * FinalizationRegistry, WebAssembly) and the Annex B RegExp.prototype.compile (it
 * rewrites a regex in place, frozen or not), leaves no direct eval (the global `eval`
 * evaluates strict code in global scope only) and no way to name a script made at run time
 * (`eval` and the Function constructors refuse a sourceURL comment), takes __callbench, __callbenchStandin and
 * itself off the global object (the host keeps the runner in a global lexical binding
 * with a random name, which samples cannot enumerate), caps allocations that bypass
 * the V8 heap limit, and deep-freezes every intrinsic, the stand-in, the runner and
 * globalThis, so no sample can leave state behind for the next one.  A per-sample
 * integrity check (global key count, frozen sentinels, the source and flags of every
 * shared regex) tells the host when that failed.  With options.freeze === false only
 * the removals and caps are applied (for a context that serves a single sample).
 */
globalThis.__callbench = (function () {
  'use strict';

  var makeEnv = __callbenchStandin;
  var AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
  var FunctionCtor = Function;
  var fnToString = Function.prototype.toString;
  var NAMES = makeEnv.bindingNames;
  var DUPLICATE = /Identifier '([^']+)' has already been declared/;
  var current = null;
  var integrity = null;

  function describe(env, e) {
    try {
      return env.describeError(e);
    } catch (err) {
      return 'Uncaught exception';
    }
  }

  function start(code, defs, skip, options, mark) {
    var env = makeEnv(options, defs);
    var run = { env: env, error: null, settled: false };
    current = run;
    skip = skip || [];
    var params = [];
    var args = [];
    NAMES.forEach(function (n) {
      if (skip.indexOf(n) === -1) {
        params.push(n);
        args.push(env.bindings[n]);
      }
    });
    if (defs) {
      Object.keys(defs).forEach(function (n) {
        if (skip.indexOf(n) === -1 && params.indexOf(n) === -1) {
          params.push(n);
          args.push(defs[n]);
        }
      });
    }
    var fn = null;
    while (fn === null) {
      try {
        // no directive of ours: the code runs in sloppy mode as Node runs CommonJS, unless its
        // own first statement is a 'use strict' directive (the extractor adds one for ES modules)
        fn = AsyncFunction.apply(null, params.concat(['\n' + code + '\n']));
      } catch (e) {
        // `const axios = require('axios')` and friends: the code's own declaration wins.
        var m = e instanceof SyntaxError ? DUPLICATE.exec(e.message) : null;
        var idx = m ? params.indexOf(m[1]) : -1;
        if (idx === -1) {
          run.error = describe(env, e);
          run.settled = true;
          return undefined;
        }
        params.splice(idx, 1);
        args.splice(idx, 1);
      }
    }
    if (mark) {
      fn = armed(params, code, mark, env);
      if (typeof fn === 'string') {
        run.error = fn;
        run.settled = true;
        return undefined;
      }
    }
    // top-level `this` is module.exports, as in a CommonJS module
    var promise = fn.apply(env.bindings.exports, args);
    promise.then(function () {
      run.settled = true;
    }, function (e) {
      run.error = describe(env, e);
      run.settled = true;
    });
    return undefined;
  }

  // ':line:column' of UTF-16 offset `at` in `code`, as V8 reports it for a position in the
  // function `armed` makes (its first `lines` lines come before the code).
  function position(code, at, lines) {
    var lineBreak = /\r\n|[\n\r\u2028\u2029]/g; // what JavaScript counts as line breaks
    var before = code.slice(0, at);
    var line = 1;
    var lineStart = 0;
    var m;
    while ((m = lineBreak.exec(before)) !== null) {
      line++;
      lineStart = m.index + m[0].length;
    }
    return ':' + (line + lines) + ':' + (at - lineStart + 1);
  }

  // The sample's function again, now inside `function (<name>) { return async function
  // (params) {...} }` called with the run's `arm`.  The body already compiled on its own
  // above (V8 checks that a dynamic function's body cannot close it early), and the
  // function this returns must have exactly the expected source text: the code cannot
  // have broken out of its body into the closure around it.  Returns the function, or an
  // error line.
  function armed(params, code, mark, env) {
    var parts = mark.split(':');
    // 'name/starter': the starter's own calls pass `starter()`, the run's starter token (see the
    // stand-in's `starterArm`); bound like `name`, in the closure only
    var names = parts[0].split('/');
    var name = names[0];
    var starter = names.length > 1 ? names[1] : null;
    // sloppy like the function above (strictness comes from the code's own directive): the
    // closure runs once, before any sample code, and nothing of the sample can reach it
    var head = ';\nreturn ';
    var inner = 'async function (' + params.join(', ') + ') {\n' + code + '\n}';
    // Function(p, body) compiles "(function anonymous(p\n) {\n" + body + "\n})": 2 lines,
    // then head (1), then inner's first line (1) come before the code
    var lines = 4;
    var calls = [];
    for (var i = 2; i < parts.length; i++) calls.push(position(code, Number(parts[i]), lines));
    var arm = env.armer(position(code, Number(parts[1]), lines), calls);
    var fn;
    try {
      // Function(a, b, body) compiles "(function anonymous(a,b\n) {\n": the same 2 lines
      fn = starter === null ? FunctionCtor(name, head + inner + ';\n')(arm)
        : FunctionCtor(name, starter, head + inner + ';\n')(arm, env.starterArm);
    } catch (e) {
      return 'the sandbox could not prepare the extracted call (' + String(e && e.name) + ')';
    }
    if (typeof fn !== 'function' || fnToString.call(fn) !== inner) {
      return 'the sandbox could not prepare the extracted call (the code does not stay inside its function)';
    }
    return fn;
  }

  function result(run) {
    current = null;
    run.env.recorder.close();
    var json = run.env.recorder.resultJSON(run.error, run.settled);
    var damage = integrity === null ? '' : integrity();
    return json.slice(0, -1) + ',"intact":' + (damage ? 'false' : 'true') + ',"damage":' + JSON.stringify(damage) + '}';
  }

  function settle() {
    var run = current;
    if (run === null) return '{"lost":true}';
    if (run.env.recorder.pendingTimers() > 0) {
      run.env.recorder.fireNextTimer();
      return 1;
    }
    // then the callbacks on the way to the marked call that nothing invoked (an express
    // route, a ws handler: their library is an inert stand-in), one per step
    if (run.env.recorder.fireNextDeferred()) return 1;
    return result(run);
  }

  function finish() {
    var run = current;
    if (run === null) return '{"lost":true}';
    return result(run);
  }

  function setIntegrityCheck(fn) {
    if (integrity === null) integrity = fn;
  }

  return { start: start, settle: settle, finish: finish, setIntegrityCheck: setIntegrityCheck };
})();

globalThis.__callbenchLockdown = function (options) {
  'use strict';
  options = options || {};
  var maxBytes = options.maxBytes || 64 * 1024 * 1024;
  var maxElements = options.maxElements || 16 * 1024 * 1024;
  var g = globalThis;

  // 0. The runner and the stand-in leave the global object: a sample that reads
  //    globalThis.__callbench (e.g. to start a run of its own and have that one scored)
  //    finds nothing.  They stay reachable to the freeze below through `hidden`.
  var harness = g.__callbench;
  var hidden = [harness, g.__callbenchStandin];
  ['__callbench', '__callbenchStandin', '__callbenchLockdown'].forEach(function (k) {
    delete g[k];
  });

  // 1. Host APIs that schedule work outside a sample, or share memory, go away.
  //    (mini_racer installs a setTimeout built on Atomics.waitAsync; samples get a
  //    virtual-clock setTimeout from the stand-in instead.)
  ['setTimeout', 'clearTimeout', '__timer_manager'].forEach(function (k) {
    if (Object.prototype.hasOwnProperty.call(g, k)) {
      try {
        g[k] = undefined;
      } catch (e) { /* non-writable: frozen below anyway */ }
    }
  });
  ['WebAssembly', 'FinalizationRegistry', 'SharedArrayBuffer', 'Atomics'].forEach(function (k) {
    delete g[k];
  });
  // No direct eval: `eval(text)` is direct only when the name `eval` resolves to the
  //    realm's original %eval%, and direct eval reads the caller's local bindings by name,
  //    so a sample could read the random name of the harness's `arm` binding from its own
  //    source text (fn.toString()) and look it up.  The global `eval` becomes a plain
  //    function that evaluates strict code in global scope (indirect eval; strict like the
  //    sample, so its `var`s stay its own); the original stays only in this closure, and
  //    no other property holds it.
  // The stand-in matches the picked call by the stack below it, and never matches a stack as
  //    deep as this limit (a cut stack could hide a frame): 100 frames, not V8's 10, so that
  //    honest code reached through helpers, callbacks and the extractor's wrappers still is.
  Error.stackTraceLimit = 100;
  // Code the sample makes at run time may not name its script (a `//# sourceURL=` comment):
  //    stack text is how the stand-in tells the picked call from others, and a script named
  //    like the sample's own could make a frame of another function read like the call's.
  //    The Function constructors and `eval` refuse such source.
  function unnamed(text) {
    text = String(text);
    if (text.indexOf('sourceURL') !== -1 || text.indexOf('sourceMappingURL') !== -1) {
      throw new SyntaxError('code made at run time may not name its script (sourceURL) in the sandbox');
    }
    return text;
  }
  function tameConstructor(Orig, owners) {
    var Tamed = {
      [Orig.name]: function () {
        var args = [];
        for (var i = 0; i < arguments.length; i++) args.push(unnamed(arguments[i]));
        return Reflect.construct(Orig, args, new.target === undefined || new.target === Tamed ? Orig : new.target);
      }
    }[Orig.name];
    Object.defineProperty(Tamed, 'length', { value: 1 });
    Object.defineProperty(Tamed, 'prototype', { value: Orig.prototype, writable: false, enumerable: false, configurable: false });
    owners.forEach(function (o) {
      Object.defineProperty(o, 'constructor', { value: Tamed, writable: true, enumerable: false, configurable: true });
    });
    return Tamed;
  }
  g.Function = tameConstructor(Function, [Function.prototype]);
  tameConstructor(Object.getPrototypeOf(async function () {}).constructor, [Object.getPrototypeOf(async function () {})]);
  tameConstructor(Object.getPrototypeOf(function* () {}).constructor, [Object.getPrototypeOf(function* () {})]);
  tameConstructor(Object.getPrototypeOf(async function* () {}).constructor, [Object.getPrototypeOf(async function* () {})]);
  var originalEval = g.eval;
  var globalEval = {
    eval: function (x) { return typeof x === 'string' ? originalEval('"use strict";void 0;' + unnamed(x)) : x; }
  }.eval;
  Object.defineProperty(globalEval, 'length', { value: 1 });
  Object.defineProperty(g, 'eval', { value: globalEval, writable: true, enumerable: false, configurable: true });
  // Legacy RegExp statics leak the last match of one sample into the next.
  ['input', '$_', 'lastMatch', '$&', 'lastParen', '$+', 'leftContext', '$`', 'rightContext', "$'",
    '$1', '$2', '$3', '$4', '$5', '$6', '$7', '$8', '$9'].forEach(function (k) {
    delete RegExp[k];
  });
  // RegExp.prototype.compile re-initialises a regex in place; freezing does not stop it
  // (it throws only after the pattern has changed), so a shared regex could be rewritten.
  delete RegExp.prototype.compile;

  // 2. Allocation caps for what the V8 heap limit does not see in time: buffers live
  //    outside the heap, and Array.prototype.fill on a huge sparse array grows a
  //    dictionary inside one builtin call until V8 aborts the process.
  //    Guarding a few such builtins keeps those samples fast; the worker process is
  //    the backstop for the ones not listed here.
  function guard(owner, name, tooBig) {
    var orig = owner[name];
    var wrapped = {
      [name]: function () {
        if (tooBig(this, arguments)) throw new RangeError('Allocation too large for the sandbox');
        return orig.apply(this, arguments);
      }
    }[name];
    Object.defineProperty(owner, name, { value: wrapped, writable: true, enumerable: false, configurable: true });
  }
  guard(Array.prototype, 'fill', function (self) { return self != null && Number(self.length) > maxElements; });
  guard(Array, 'from', function (self, args) {
    var src = args[0];
    return src != null && typeof src === 'object' && Number(src.length) > maxElements;
  });
  guard(String.prototype, 'split', function (self, args) {
    return args[0] === '' && String(self).length > maxElements;
  });

  function checkBytes(n) {
    if (Number(n) > maxBytes) throw new RangeError('Allocation too large for the sandbox');
  }
  function capped(Ctor, bytesPerElement) {
    var proxy = new Proxy(Ctor, {
      construct: function (target, args, newTarget) {
        var a = args[0];
        if (typeof a === 'number' || typeof a === 'string') checkBytes(Number(a) * bytesPerElement);
        else if (a !== null && typeof a === 'object' && !(a instanceof ArrayBuffer) && typeof a.length === 'number') {
          checkBytes(a.length * bytesPerElement);
        }
        var opts = args[1];
        if (opts !== null && typeof opts === 'object' && 'maxByteLength' in opts) checkBytes(opts.maxByteLength);
        return Reflect.construct(target, args, newTarget);
      }
    });
    Object.defineProperty(Ctor.prototype, 'constructor', { value: proxy, writable: true, enumerable: false, configurable: true });
    Object.defineProperty(g, Ctor.name, { value: proxy, writable: true, enumerable: false, configurable: true });
  }
  capped(ArrayBuffer, 1);
  ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array',
    'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array', 'Float16Array'].forEach(function (name) {
    if (typeof g[name] === 'function') capped(g[name], g[name].BYTES_PER_ELEMENT);
  });
  ['transfer', 'transferToFixedLength', 'resize'].forEach(function (name) {
    var orig = g.ArrayBuffer.prototype[name];
    if (typeof orig !== 'function') return;
    Object.defineProperty(g.ArrayBuffer.prototype, name, {
      value: function (n) {
        if (n !== undefined) checkBytes(n);
        return orig.apply(this, arguments);
      },
      writable: true, enumerable: false, configurable: true
    });
  });

  if (options.freeze === false) {
    return JSON.stringify({ frozen: 0, unfrozen: [], globals: Reflect.ownKeys(g).length, regexes: 0, internal_state: [] });
  }

  // 3. Override taming: with frozen prototypes, `this.name = 'X'` in an Error subclass
  //    or `obj.toString = fn` would throw in strict code (the "override mistake").
  //    These data properties become accessors whose setter defines an own property on
  //    the receiver, so ordinary code keeps working while the prototype stays intact.
  function tame(proto, key) {
    var d = Object.getOwnPropertyDescriptor(proto, key);
    if (!d || !('value' in d) || !d.configurable) return;
    var value = d.value;
    Object.defineProperty(proto, key, {
      get: function () { return value; },
      set: function (v) {
        if (this === proto) throw new TypeError("Cannot assign to read only property '" + String(key) + "' of object");
        Object.defineProperty(this, key, { value: v, writable: true, enumerable: true, configurable: true });
      },
      enumerable: d.enumerable,
      configurable: false
    });
  }
  ['constructor', 'toString', 'valueOf', 'toLocaleString', 'hasOwnProperty', 'isPrototypeOf',
    'propertyIsEnumerable'].forEach(function (k) { tame(Object.prototype, k); });
  ['toString', 'constructor'].forEach(function (k) { tame(Function.prototype, k); });
  [Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError,
    typeof AggregateError === 'function' ? AggregateError : null].forEach(function (E) {
    if (!E) return;
    ['name', 'message', 'constructor', 'toString'].forEach(function (k) { tame(E.prototype, k); });
  });

  // 4. Deep freeze everything reachable from globalThis and the hidden intrinsics.
  var roots = [g].concat(hidden);
  function add(thunk) {
    try {
      roots.push(thunk());
    } catch (e) { /* intrinsic not present in this V8 */ }
  }
  add(function () { return Object.getPrototypeOf(function* () {}); });
  add(function () { return Object.getPrototypeOf(async function () {}); });
  add(function () { return Object.getPrototypeOf(async function* () {}); });
  add(function () { return Object.getPrototypeOf([][Symbol.iterator]()); });
  add(function () { return Object.getPrototypeOf(''[Symbol.iterator]()); });
  add(function () { return Object.getPrototypeOf(new Map()[Symbol.iterator]()); });
  add(function () { return Object.getPrototypeOf(new Set()[Symbol.iterator]()); });
  add(function () { return Object.getPrototypeOf(/a/g[Symbol.matchAll]('a')); });
  add(function () { return Object.getPrototypeOf(Int8Array); });
  add(function () { return Object.getPrototypeOf([].values().map(function (x) { return x; })); });
  add(function () { return Object.getPrototypeOf(Iterator.from({ next: function () { return { done: true }; } })); });
  add(function () { return Object.getPrototypeOf(new Intl.Segmenter().segment('a')); });
  add(function () { return Object.getPrototypeOf(new Intl.Segmenter().segment('a')[Symbol.iterator]()); });
  add(function () { return new Error('x'); }); // shared accessor functions of error.stack
  add(function () { return (function () { return arguments; })(); });
  if (typeof __TimerManager === 'function') add(function () { return __TimerManager; }); // eslint-disable-line no-undef

  var seen = new Set();
  var queue = roots.slice();
  while (queue.length) {
    var obj = queue.pop();
    if (obj === null || obj === undefined || (typeof obj !== 'object' && typeof obj !== 'function') || seen.has(obj)) continue;
    seen.add(obj);
    queue.push(Object.getPrototypeOf(obj));
    var keys = Reflect.ownKeys(obj);
    for (var i = 0; i < keys.length; i++) {
      var d = Object.getOwnPropertyDescriptor(obj, keys[i]);
      if (!d) continue;
      if ('value' in d) queue.push(d.value);
      else {
        queue.push(d.get);
        queue.push(d.set);
      }
    }
  }
  var unfrozen = [];
  seen.forEach(function (o) {
    try {
      Object.freeze(o);
    } catch (e) {
      unfrozen.push(String(e));
    }
  });

  // 5. Objects whose internal slots a freeze does not cover.  Shared regexes are
  //    fingerprinted (source and flags, read with the original getters); any shared
  //    Map, Set, Date, buffer, ... would be mutable state and is reported instead.
  var regexSource = Object.getOwnPropertyDescriptor(RegExp.prototype, 'source').get;
  var regexFlags = Object.getOwnPropertyDescriptor(RegExp.prototype, 'flags').get;
  function getter(proto, key) { return Object.getOwnPropertyDescriptor(proto, key).get; }
  var mapSize = getter(Map.prototype, 'size');
  var setSize = getter(Set.prototype, 'size');
  var bufferLength = getter(ArrayBuffer.prototype, 'byteLength');
  var brands = [
    ['Map', function (o) { mapSize.call(o); }],
    ['Set', function (o) { setSize.call(o); }],
    ['WeakMap', function (o) { WeakMap.prototype.has.call(o, {}); }],
    ['WeakSet', function (o) { WeakSet.prototype.has.call(o, {}); }],
    ['Date', function (o) { Date.prototype.getTime.call(o); }],
    ['ArrayBuffer', function (o) { bufferLength.call(o); }],
    ['ArrayBufferView', function (o) { if (!ArrayBuffer.isView(o)) throw new TypeError('not a view'); }]
  ];
  function is(check, o) {
    try {
      check(o);
      return true;
    } catch (e) {
      return false;
    }
  }
  var regexes = [];
  var internalState = [];
  seen.forEach(function (o) {
    if (typeof o !== 'object' || o === RegExp.prototype) return;
    if (is(function (x) { regexSource.call(x); }, o)) {
      regexes.push([o, regexSource.call(o), regexFlags.call(o)]);
      return;
    }
    for (var b = 0; b < brands.length; b++) if (is(brands[b][1], o)) internalState.push(brands[b][0]);
  });

  // 6. Cheap per-sample integrity check: '' when intact, else what changed.
  var globalKeyCount = Reflect.ownKeys(g).length;
  var sentinels = [Object.prototype, Array.prototype, Function.prototype, RegExp.prototype, g];
  var stringify = JSON.stringify;
  var push = Array.prototype.push;
  var ownKeys = Reflect.ownKeys;
  var isFrozen = Object.isFrozen;
  harness.setIntegrityCheck(function () {
    if (ownKeys(g).length !== globalKeyCount) return 'the global object has other properties';
    for (var k = 0; k < sentinels.length; k++) if (!isFrozen(sentinels[k])) return 'a prototype was unfrozen';
    if (JSON.stringify !== stringify || Array.prototype.push !== push) return 'a builtin was replaced';
    for (var r = 0; r < regexes.length; r++) {
      var re = regexes[r];
      if (regexSource.call(re[0]) !== re[1] || regexFlags.call(re[0]) !== re[2]) return 'a shared regex was changed';
    }
    return '';
  });
  return JSON.stringify({
    frozen: seen.size, unfrozen: unfrozen, globals: globalKeyCount, regexes: regexes.length, internal_state: internalState
  });
};
