//go:build !js

package pagebench

import (
	"context"
	_ "embed"
	"fmt"
	"os"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
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

// WorkerHeap is one dedicated Worker's used JS heap, in bytes, with the
// URL of its script (a Worker started from a blob: URL reports that URL).
type WorkerHeap struct {
	URL  string
	Used int64
}

// WorkerHeaps returns the used JS heap of every dedicated Worker running
// in the browser of ctx (a context from Start or chromedp.NewContext),
// after a full garbage collection in each: V8's own figure (CDP
// HeapProfiler.collectGarbage, then Runtime.getHeapUsage), since a Worker
// has no performance.memory. It attaches to each Worker's target and
// detaches again, leaving the Worker running. A Worker that ends meanwhile
// (one of a page navigated away from, still listed) is left out; callers
// that measure one page keep the Workers whose URLs that page made.
func WorkerHeaps(ctx context.Context) ([]WorkerHeap, error) {
	infos, err := chromedp.Targets(ctx)
	if err != nil {
		return nil, err
	}
	var out []WorkerHeap
	for _, ti := range infos {
		if ti.Type != "worker" {
			continue
		}
		wctx, cancel := chromedp.NewContext(ctx, chromedp.WithTargetID(ti.TargetID), chromedp.WithDetachOnCancel())
		var used float64
		err := chromedp.Do(wctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			if _, err := chromedp.Call(ctx, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
				return err
			}
			r, err := chromedp.Call(ctx, runtime.GetHeapUsage, cdp.Empty{})
			used = r.UsedSize
			return err
		}))
		cancel()
		if err != nil {
			if gone, lerr := targetGone(ctx, ti.TargetID); lerr == nil && gone {
				continue
			}
			return nil, fmt.Errorf("the heap of Worker %s: %w", ti.URL, err)
		}
		out = append(out, WorkerHeap{URL: ti.URL, Used: int64(used)})
	}
	return out, nil
}

// targetGone reports whether id is no longer among the browser's targets.
func targetGone(ctx context.Context, id target.ID) (bool, error) {
	infos, err := chromedp.Targets(ctx)
	if err != nil {
		return false, err
	}
	for _, ti := range infos {
		if ti.TargetID == id {
			return false, nil
		}
	}
	return true, nil
}
