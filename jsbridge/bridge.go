//go:build js && wasm

package jsbridge

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall/js"

	"github.com/replica-sync/replica/engine"
)

//go:embed facade.js
var facadeJS string

// FacadeSource returns the source of facade.js, the body of the function
// that builds the JavaScript API (see Install). web/replica.js carries a
// verbatim copy so that pages whose Content-Security-Policy forbids
// 'unsafe-eval' need not compile it with new Function.
func FacadeSource() string { return facadeJS }

// Result kinds of settle (facade.js reads the same numbers from KINDS).
const (
	kindUndefined = iota
	kindJSON      // text is JSON
	kindRows      // text is an encoder result; resolve with the rows
	kindRow       // the same, resolve with the first row or undefined
	kindError     // text is a jsError
	kindMany      // text is an encoder result with errors; see insertMany
)

var kindNames = map[string]int{
	"undefined": kindUndefined, "json": kindJSON, "rows": kindRows,
	"row": kindRow, "error": kindError, "many": kindMany,
}

// bridge is the installed API: the facade's callbacks and the open
// replicas by handle.
type bridge struct {
	dispatchFn js.Func
	api        js.Value // the object installed as globalThis.Replica
	settleFn   js.Value // settle(id, kind, text, blobs)
	emitFn     js.Value // emit(handle, event, kind, text, blobs)
	deliverFn  js.Value // deliver(handle, sid, kind, text, blobs)
	settleVFn  js.Value // settleValue(id, value): resolve with a JS value (a SealKey)
	resolveFn  js.Value // resolve(fn, kind, text, blobs): a JS resolver's choice (resolver.go)
	handleOf   js.Value // handleOf(db object) -> handle (tests)
	idbHelper  js.Value // the loader's copy of idbkv's helper.js, or undefined

	mu     sync.Mutex
	dbs    map[int]*db
	nextDB int
}

// testHook, when set (tests only), runs at the start of every operation
// with its method name ("db.count"); a panic there exercises the recovery
// paths.
var testHook func(method string)

var (
	jsUint8Array = js.Global().Get("Uint8Array")
	jsObject     = js.Global().Get("Object")
)

// Install builds the JavaScript API and makes it available:
//
//   - If globalThis.Replica is the loader of web/replica.js (it has an
//     _install function), the loader's verbatim copies of facade.js
//     (Replica._facade) and of idbkv's helper.js (Replica._idbHelper,
//     handed to every Store with idbkv.Helper) are used, and the API is
//     handed to Replica._install, which resolves Replica.ready. The npm
//     package's ES module (index.js, derived from replica.js) puts its
//     loader there only while go.run runs Go's main up to its first wait,
//     which is when Install runs, and then restores the global.
//   - Otherwise facade.js and helper.js are compiled with new Function and
//     the API is installed as globalThis.Replica (tests, or a page that
//     runs replica.wasm itself). A page whose Content-Security-Policy
//     forbids 'unsafe-eval' must use replica.js.
//
// It returns a function that uninstalls the API (tests); cmd/wasm never
// calls it. Errors: the facade could not be compiled.
func Install() (uninstall func(), err error) {
	b := &bridge{dbs: map[int]*db{}}
	b.dispatchFn = js.FuncOf(b.dispatch)
	ops := jsObject.New()
	for i, op := range operations {
		ops.Set(op.name, i+1)
	}
	listen := jsObject.New()
	for n, v := range listenNames {
		listen.Set(n, v)
	}
	ops.Set("listenBits", listen) // the listen operation's mask bits
	// A row's value above it is refused in JavaScript (sent as {"o": n}).
	ops.Set("maxValueBytes", engine.MaxLocalRowSize)
	kinds := jsObject.New()
	for n, v := range kindNames {
		kinds.Set(n, v)
	}
	loader := js.Global().Get("Replica")
	fromLoader := loader.Type() == js.TypeObject && loader.Get("_install").Type() == js.TypeFunction
	var built js.Value
	thrown := catchJS(func() {
		var factory js.Value
		if fromLoader && loader.Get("_facade").Type() == js.TypeFunction {
			factory = loader.Get("_facade")
		} else {
			factory = js.Global().Get("Function").New("go", "OPS", "KINDS", facadeJS)
		}
		built = factory.Invoke(b.dispatchFn, ops, kinds)
	})
	if thrown != nil {
		b.dispatchFn.Release()
		return nil, fmt.Errorf("jsbridge: cannot build the JavaScript API (a Content-Security-Policy without 'unsafe-eval' needs web/replica.js): %w", thrown)
	}
	b.api = built.Get("api")
	b.settleFn = built.Get("settle")
	b.emitFn = built.Get("emit")
	b.deliverFn = built.Get("deliver")
	b.settleVFn = built.Get("settleValue")
	b.resolveFn = built.Get("resolve")
	b.handleOf = built.Get("handleOf")
	if fromLoader {
		b.idbHelper = loader.Get("_idbHelper")
		loader.Call("_install", b.api)
	} else {
		js.Global().Set("Replica", b.api)
	}
	current.Store(b)
	return func() {
		b.mu.Lock()
		open := len(b.dbs)
		b.mu.Unlock()
		if open == 0 {
			b.dispatchFn.Release()
		}
		if js.Global().Get("Replica").Equal(b.api) {
			js.Global().Delete("Replica")
		}
		current.CompareAndSwap(b, nil)
	}, nil
}

// catchJS runs fn and returns what JavaScript threw in it, or nil.
func catchJS(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			var jsErr js.Error
			if e, ok := r.(error); ok && errors.As(e, &jsErr) {
				err = jsErr
				return
			}
			panic(r)
		}
	}()
	fn()
	return nil
}

// call is one request from facade.js, its arguments copied into Go.
type call struct {
	b              *bridge
	op             *operation
	handle, tx, id int
	args           [4]arg // a, b, c, d
	// tok is a write call's journal token (worker mode, journal.go),
	// nil for other calls.
	tok *journalTok
}

// arg is one argument: a string, a number or a Uint8Array (bytes), or
// another object, kept as it is (v: the SealKeys of db.sync.connect); the
// accessors of another type read the zero value.
type arg struct {
	s     string
	n     int
	bytes []byte
	v     js.Value
}

// setArgs copies the arguments a, b, c, d into Go.
func (c *call) setArgs(args []js.Value) {
	for i, v := range args[:min(len(args), len(c.args))] {
		a := &c.args[i]
		switch v.Type() {
		case js.TypeString:
			a.s = v.String()
		case js.TypeNumber:
			a.n = v.Int()
		case js.TypeFunction:
			a.v = v // Replica.open's resolver
		case js.TypeObject:
			if !v.InstanceOf(jsUint8Array) {
				a.v = v
				continue
			}
			a.bytes = make([]byte, v.Get("length").Int())
			js.CopyBytesToGo(a.bytes, v)
		}
	}
}

func (c *call) str(i int) string { return c.args[i].s }

func (c *call) int(i int) int { return c.args[i].n }

// bytes returns the Uint8Array argument i (nil if absent).
func (c *call) bytes(i int) []byte { return c.args[i].bytes }

// value returns argument i when it is a function or an object other than
// a Uint8Array (undefined otherwise).
func (c *call) value(i int) js.Value { return c.args[i].v }

// dispatch is the single JS->Go entry point: go(op, handle, tx, id, a, b,
// c, d), and for a write call in worker mode its journal token after them
// (token, ack, journal: journal.go). It never blocks: it copies the arguments into Go and either
// answers at once or queues the work on the replica's worker goroutine; the
// answer comes back through settle(id, ...). A panic rejects the call with
// INTERNAL.
func (b *bridge) dispatch(_ js.Value, args []js.Value) (ret any) {
	c := &call{b: b}
	defer func() {
		if r := recover(); r != nil {
			b.reply(c.id, fail(panicError("dispatch", r), "", ""))
		}
	}()
	if len(args) < 4 {
		return nil
	}
	n := args[0].Int()
	c.handle, c.tx, c.id = args[1].Int(), args[2].Int(), args[3].Int()
	c.setArgs(args[4:])
	c.tok = journalArgs(args)
	if n < 1 || n > len(operations) {
		b.reply(c.id, fail(fmt.Errorf("unknown operation %d", n), "", ""))
		return nil
	}
	c.op = &operations[n-1]
	if c.op.queue == noReplica {
		return c.op.now(nil, c)
	}
	b.mu.Lock()
	d := b.dbs[c.handle]
	b.mu.Unlock()
	if d == nil {
		b.reply(c.id, fail(closedError(), "", ""))
		return nil
	}
	if c.op.queue == answered {
		return c.op.now(d, c)
	}
	return d.handle(c)
}

// result is the answer to one call.
type result struct {
	kind  int
	text  string
	blobs []byte
}

func fail(err error, method, table string) result {
	return result{kind: kindError, text: classify(err, method, table).json()}
}

// intResult resolves with the number n.
func intResult(n int) result { return result{kind: kindJSON, text: strconv.Itoa(n)} }

// reply settles the promise id (0: none) with r.
func (b *bridge) reply(id int, r result) {
	if id == 0 {
		return
	}
	var blobs any
	if r.blobs != nil {
		a := jsUint8Array.New(len(r.blobs))
		js.CopyBytesToJS(a, r.blobs)
		blobs = a
	}
	b.settleFn.Invoke(id, r.kind, r.text, blobs)
}

// settleValue resolves the promise id with the JS value v.
func (b *bridge) settleValue(id int, v js.Value) {
	if id != 0 {
		b.settleVFn.Invoke(id, v)
	}
}

func closedError() error {
	return &bridgeError{code: codeClosed, msg: "the replica is closed"}
}

// panicError turns a recovered panic into an INTERNAL error, logging the
// stack to the console.
func panicError(method string, r any) error {
	fmt.Fprintf(os.Stderr, "replica: panic in %s: %v\n%s", method, r, debug.Stack())
	return &bridgeError{code: codeInternal, msg: fmt.Sprintf("internal error (Go panic): %v", r)}
}
