//go:build js && wasm

// Command wasm is Replica for the browser: built as web/replica.wasm
// (`make wasm`), loaded by web/replica.js. It installs the JavaScript API
// (globalThis.Replica, see web/replica.d.ts) and then blocks forever, so
// the module never exits: a Go panic inside a call rejects that call with
// code INTERNAL and the module keeps serving the page.
package main

import (
	"fmt"
	"os"
	"syscall/js"

	"github.com/replica-sync/replica/jsbridge"
)

func main() {
	if _, err := jsbridge.Install(); err != nil {
		// Nothing can work: say why on the console and reject the loader's
		// Replica.ready. Block rather than exit: an exit would make later
		// calls fail with "Go program has already exited" instead.
		fmt.Fprintln(os.Stderr, "replica:", err)
		if l := js.Global().Get("Replica"); l.Type() == js.TypeObject && l.Get("_fail").Type() == js.TypeFunction {
			l.Call("_fail", err.Error())
		}
	}
	select {}
}
