//go:build js && wasm

package seal

import (
	"syscall/js"
	"testing"
)

// TestWebCryptoAwait: await returns an error, and does not panic (which
// would kill the program from a session goroutine), when it is given no
// Promise or a thenable whose then throws; a settled Promise still
// answers.
func TestWebCryptoAwait(t *testing.T) {
	for name, v := range map[string]js.Value{
		"undefined":     js.Undefined(),
		"a number":      js.ValueOf(5),
		"then throws":   js.Global().Call("eval", `({then() { throw new Error("no"); }})`),
		"then not func": js.Global().Call("eval", `({then: 1})`),
	} {
		if _, err := await(v); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	v, err := await(js.Global().Get("Promise").Call("resolve", 7))
	if err != nil || v.Int() != 7 {
		t.Errorf("a resolved Promise: %v, %v", v, err)
	}
	if _, err := await(js.Global().Get("Promise").Call("reject", "x")); err == nil {
		t.Error("a rejected Promise: no error")
	}
}
