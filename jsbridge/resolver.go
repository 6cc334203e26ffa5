//go:build js && wasm

package jsbridge

import (
	"syscall/js"

	"github.com/replica-sync/replica/engine"
)

// Replica.open's resolver (replica.d.ts: OpenOptions.resolver): who wins a
// conflict — a synced write of a cell this replica holds another version
// of (engine.ConflictResolver, docs/design.md § Conflicts and resolvers).
// "lww" (the default: the higher HLC), "localWins" and "remoteWins" are
// the engine's own; a function is called synchronously, from the Go code
// applying the batch, inside its IndexedDB transaction (it must not
// await: a Promise it returns counts as no answer), through facade.js's
// resolve(fn, kind, text, blobs), with the conflict encoded as rows are
// (resolverContext), and answers "local" or "remote". Anything else — an
// exception, another answer — is reported to the console and LWW decides
// that cell, so an app's bug never blocks a sync.

// resolver returns the engine resolver for options.resolver's name, with
// fn the JS function when the name is "function" (set by facade.js).
func (b *bridge) resolver(name string, fn js.Value) (engine.ConflictResolver, error) {
	switch name {
	case "lww":
		return nil, nil // the engine's fast path
	case "localWins":
		return engine.LocalWins, nil
	case "remoteWins":
		return engine.RemoteWins, nil
	case "function":
		if fn.Type() == js.TypeFunction {
			return b.jsResolver(fn), nil
		}
	}
	return nil, argError(`options.resolver must be "lww", "localWins", "remoteWins" or a function (conflict) => "local" | "remote", got %q`, name)
}

// jsResolver calls fn for each conflict.
func (b *bridge) jsResolver(fn js.Value) engine.ConflictResolver {
	return func(c engine.ConflictContext) (takeRemote bool) {
		lww := engine.LWW(c)
		defer func() {
			if p := recover(); p != nil {
				_ = panicError("resolver", p) // logged
				takeRemote = lww
			}
		}()
		r := resolverContext(&c)
		var blobs any
		if r.blobs != nil {
			a := jsUint8Array.New(len(r.blobs))
			js.CopyBytesToJS(a, r.blobs)
			blobs = a
		}
		switch v := b.resolveFn.Invoke(fn, r.kind, r.text, blobs); {
		case v.Type() == js.TypeNumber && v.Int() == 1:
			return true
		case v.Type() == js.TypeNumber && v.Int() == 0:
			return false
		}
		return lww
	}
}

// resolverContext encodes the resolver's argument (ResolverContext in
// replica.d.ts): the conflict event's holders (conflictHolders) without
// its outcome.
func resolverContext(c *engine.ConflictContext) result { return conflictHolders(c, nil) }
