//go:build !js

package pagebench

import (
	"context"
	_ "embed"
	"os"

	"github.com/chromedp/chromedp"
)

// The page scripts; see the package documentation.
var (
	//go:embed js/idbcount.js
	IDBCountJS string
	//go:embed js/gocount.js
	GoCountJS string
	//go:embed js/rawidb.js
	RawIDBJS string
)

// ChromiumPath is the browser to start: $REPLICA_CHROMIUM, else
// /usr/bin/chromium (Debian's chromium package, installed by make
// browser-deps).
func ChromiumPath() string {
	if p := os.Getenv("REPLICA_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// Options returns the exec allocator options for headless Chromium with
// the flags of scripts/chromium (no sandbox, as root; no GPU; no traffic
// off the machine: every host name but localhost fails to resolve), plus
// what measuring needs: exact performance.memory figures
// (--enable-precise-memory-info), a gc() function in pages
// (--js-flags=--expose-gc), and no throttling of pages in the background
// (timers and rendering of every tab run as in the foreground). extra come
// last.
func Options(extra ...chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath()),
		chromedp.NoSandbox,
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"),
		chromedp.Flag("enable-precise-memory-info", true),
		chromedp.Flag("js-flags", "--expose-gc"),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
	)
	return append(opts, extra...)
}

// Start starts Chromium with Options(extra...) and returns a context for
// its first tab; cancel stops the browser and removes its throwaway
// profile.
func Start(parent context.Context, extra ...chromedp.ExecAllocatorOption) (ctx context.Context, cancel context.CancelFunc, err error) {
	actx, cancelA := chromedp.NewExecAllocator(parent, Options(extra...)...)
	ctx, cancelB := chromedp.NewContext(actx)
	cancel = func() { cancelB(); cancelA() }
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		return nil, nil, err
	}
	return ctx, cancel, nil
}
