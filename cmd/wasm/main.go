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

	"github.com/replica-sync/replica/jsbridge"
)

func main() {
	if _, err := jsbridge.Install(); err != nil {
		// Nothing can work; say why on the console. The loader's
		// Replica.ready stays pending, so block rather than exit: an exit
		// would make every later call fail with "Go program has already
		// exited" instead of this message.
		fmt.Fprintln(os.Stderr, "replica:", err)
	}
	select {}
}
