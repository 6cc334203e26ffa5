//go:build !js

package client_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/cities"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/seal"
)

// The sealed cities test: the 171,075 GeoNames cities and some blobs in a
// sealed database, synced by a real client through a real relay (bbolt
// files, loopback WebSockets), bootstrapped by a new device from a sealed
// checkpoint, then every file of the relay's data directory grepped for
// the plaintext.

// Names of the sealed cities schema. They are long and unusual so that a
// match in a relay file cannot be chance (the short names of citiesSchema,
// "id" or "lat", occur in any file).
const (
	scWest   = "sealedcitieswest"
	scEast   = "sealedcitieseast"
	scPhotos = "sealedcityphotos"
)

var scColumns = []string{"cityident", "cityname", "citylatitude", "citylongitude", "citycountry", "cityadminone", "cityadmintwo"}

func sealedCitiesSchema() *model.Schema {
	cols := []model.ColumnDef{
		{Name: "cityident", Type: model.KindText},
		{Name: "cityname", Type: model.KindText},
		{Name: "citylatitude", Type: model.KindReal},
		{Name: "citylongitude", Type: model.KindReal},
		{Name: "citycountry", Type: model.KindText},
		{Name: "cityadminone", Type: model.KindText},
		{Name: "cityadmintwo", Type: model.KindText},
	}
	return &model.Schema{Tables: []model.TableDef{
		{Name: scWest, Columns: cols, PrimaryKey: []string{"cityident"}},
		{Name: scEast, Columns: cols, PrimaryKey: []string{"cityident"}},
		{Name: scPhotos, PrimaryKey: []string{"photoident"}, Columns: []model.ColumnDef{
			{Name: "photoident", Type: model.KindText},
			{Name: "photobytes", Type: model.KindBlob},
		}},
	}}
}

func sealedCityTable(c cities.City) string {
	if c.Lng < 0 {
		return scWest
	}
	return scEast
}

func sealedCityRow(i int, c cities.City) map[string]any {
	return map[string]any{"cityident": fmt.Sprintf("c%06d", i), "cityname": c.Name, "citylatitude": c.Lat, "citylongitude": c.Lng,
		"citycountry": c.Country, "cityadminone": c.Admin1, "cityadmintwo": c.Admin2}
}

// cityPhotos are n blobs of 4 KiB of pseudo-random bytes (deterministic).
func cityPhotos(n int) [][]byte {
	r := rand.New(rand.NewChaCha8([32]byte{'s', 'e', 'a', 'l', 'e', 'd', 'p', 'h', 'o', 't', 'o'}))
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, 4096)
		for j := 0; j < len(out[i]); j += 8 {
			binary.LittleEndian.PutUint64(out[i][j:], r.Uint64())
		}
	}
	return out
}

// needle is plaintext no file of a sealed database's relay may contain.
// inPlain: a plain database's relay file is expected to contain it (the
// control); false for the forms a plain relay never writes (raw blob
// bytes: it keeps blobs as base64 in its JSON; base64 forms of names).
type needle struct {
	what    string
	b       []byte
	inPlain bool
}

// isB64 reports whether c can occur in standard base64 text.
func isB64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}

// b64Forms returns the parts of the base64 encoding of s that are the
// same wherever s starts in the encoded data (offset 0, 1 or 2 modulo
// 3): what a relay that base64-encoded plaintext would hold.
func b64Forms(s []byte) [][]byte {
	var out [][]byte
	for k := range 3 {
		enc := base64.StdEncoding.EncodeToString(append(make([]byte, k), s...))
		// The first ceil(k*4/3) characters depend on the padding bytes,
		// the last 4 on what follows s.
		from := (k*4 + 2) / 3
		to := (len(s)+k)/3*4 - 4
		if to-from >= 12 {
			out = append(out, []byte(enc[from:to]))
		}
	}
	return out
}

// sealedCitiesSample chooses the plaintext values to grep for: n city
// names of at least 6 bytes, chosen with a PCG seeded with seed. Plaintext
// is grepped in files that are mostly base64 (the relay's JSON of sealed
// ChangeSets), where any given 6-letter word occurs by chance with
// probability about size/64^6 (0.1% in 100 MB: too often over 200 names):
// so a name qualifies only with a byte that base64 never holds (a space,
// '-', an accented letter) or at least 12 bytes. Names a JSON encoder
// escapes are left out, so that the plain control finds every one.
func sealedCitiesSample(all []cities.City, n int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	seen := map[string]bool{}
	var out []int
	for tries := 0; len(out) < n && tries < 100*n; tries++ {
		i := r.IntN(len(all))
		name := all[i].Name
		if len(name) < 6 || seen[name] || strings.ContainsAny(name, `"\<>&`) {
			continue
		}
		rare := len(name) >= 12
		for j := 0; j < len(name) && !rare; j++ {
			rare = !isB64(name[j])
		}
		if !rare {
			continue
		}
		seen[name] = true
		out = append(out, i)
	}
	return out
}

// grepFiles returns, per file under dir, the needles found in it: a
// window of the first 6 bytes of every needle, looked up at every offset.
func grepFiles(t *testing.T, dir string, needles []needle) (found map[string][]int, bytesRead int64) {
	t.Helper()
	const w = 6
	byPrefix := map[uint64][]int{}
	var first2 [1 << 16]bool // the needles' first two bytes: most offsets stop there
	key := func(b []byte) uint64 {
		var k uint64
		for _, c := range b[:w] {
			k = k<<8 | uint64(c)
		}
		return k
	}
	for i, n := range needles {
		if len(n.b) < w {
			t.Fatalf("needle %q shorter than %d bytes", n.b, w)
		}
		byPrefix[key(n.b)] = append(byPrefix[key(n.b)], i)
		first2[int(n.b[0])<<8|int(n.b[1])] = true
	}
	found = map[string][]int{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		bytesRead += int64(len(data))
		hit := make([]bool, len(needles))
		found[path] = nil
		for at := 0; at+w <= len(data); at++ {
			if !first2[int(data[at])<<8|int(data[at+1])] {
				continue
			}
			for _, ni := range byPrefix[key(data[at:])] {
				if !hit[ni] && len(data)-at >= len(needles[ni].b) && string(data[at:at+len(needles[ni].b)]) == string(needles[ni].b) {
					hit[ni] = true
					found[path] = append(found[path], ni)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found, bytesRead
}

// TestE2ESealedCities syncs the 171,075 cities and 16 blobs of 4 KiB
// sealed: device A writes them (172 transactions) and pushes them through
// a real relay (bbolt files, loopback WebSockets); device U, syncing
// meanwhile, uploads a sealed checkpoint of them (Options.CheckpointChanges);
// the relay prunes the sealed log below it after the retention horizon.
//
// Bootstrap: a new device B (the right key) bootstraps from the
// checkpoint plus the log after it (updates A made after the pruning),
// reports its progress, and ends with A's rows, cell by cell.
//
// RelayFiles: no file of the relay's data directory, while it runs and
// after it stopped, contains the plaintext: the table and column names,
// 200 city names and 50 latitudes chosen by a seeded PCG (seed logged),
// and the blobs' bytes (raw, and their base64 forms at every alignment).
// The control: a plain database of the same relay, holding the same
// sampled rows and blobs, shows every needle a plain relay writes.
//
// TestE2ESealedCheckpointTampered covers a checkpoint part altered on the
// relay's disk (refused, fallback to the log).
func TestE2ESealedCities(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes 171,075 sealed rows take minutes; TestE2ESealedCheckpointBootstrap covers the path")
	}
	all, err := cities.Load(0)
	if errors.Is(err, cities.ErrAbsent) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 171075 {
		t.Fatalf("loaded %d cities, want 171,075", len(all))
	}
	checkNoLeaks(t)
	start := time.Now()
	lap := func(what string) {
		t.Logf("%-44s %v", what, time.Since(start).Round(time.Millisecond))
		start = time.Now()
	}
	photos := cityPhotos(16)
	dir := t.TempDir()
	clock := &msClock{}
	clock.ms.Store(uint64(time.Now().UnixMilli()))
	rl := startRelayClock(t, dir, clock, time.Hour)
	key := seal.GenerateKey()
	a := newReplica(t, "a", sealedCitiesSchema(), engine.Options{}, client.Options{Sealer: keyring(t, key), PushLimit: 20000,
		CheckpointChanges: -1, BackoffBase: 50 * time.Millisecond})
	// U, another device of the database, takes A's envelopes as they
	// arrive and uploads the checkpoint. (A device that only writes does
	// not: its cursor stays where its last pull left it, as the relay
	// does not send a device its own ChangeSets back.)
	// The schema's transaction, 172 of cities, 1 of photos: U uploads
	// once it holds them all.
	txs := uint64(1 + (len(all)+999)/1000 + 1)
	u := newReplica(t, "u", sealedCitiesSchema(), engine.Options{}, client.Options{Sealer: keyring(t, key), CheckpointChanges: int(txs),
		BackoffBase: 50 * time.Millisecond})
	u.connect(t, rl.url, "sealedgeo", "")
	waitState(t, u, client.Synced)
	west := 0
	for i := 0; i < len(all); i += 1000 {
		_, err := a.db.Transact(func(tx *engine.Tx) error {
			for j, c := range all[i:min(i+1000, len(all))] {
				if sealedCityTable(c) == scWest {
					west++
				}
				if _, err := tx.Insert(sealedCityTable(c), sealedCityRow(i+j, c)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.db.Transact(func(tx *engine.Tx) error {
		for i, p := range photos {
			if _, err := tx.Insert(scPhotos, map[string]any{"photoident": fmt.Sprintf("photo%02d", i), "photobytes": p}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	lap("a: insert locally")
	a.connect(t, rl.url, "sealedgeo", "")
	waitWithin(t, 5*time.Minute, "a pushed everything", func() bool {
		time.Sleep(50 * time.Millisecond)
		acked := 0
		for _, ev := range a.ev.list() {
			if ev.Type == client.PushAcked {
				acked += ev.Result.Transactions
			}
		}
		return acked >= int(txs) // (not Pending: it reads the whole log)
	})
	lap("a: seal and push (u applying them live)")
	waitWithin(t, 2*time.Minute, "u uploaded a checkpoint of everything", func() bool {
		time.Sleep(50 * time.Millisecond)
		_, c := uploaded(u)
		return c >= txs
	})
	_, ckCursor := uploaded(u)
	lap(fmt.Sprintf("u: apply, checkpoint upload (cursor %d)", ckCursor))
	if n, _ := uploaded(a); n != 0 {
		t.Fatalf("a uploaded %d checkpoints with uploads off", n)
	}

	t.Run("Bootstrap", func(t *testing.T) {
		// Past the retention: the sealed log below the checkpoint goes, so
		// B can only bootstrap from the checkpoint.
		clock.ms.Add(uint64(2 * time.Hour / time.Millisecond))
		if err := rl.srv.Maintain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := metric(t, rl, "replica_relay_arrivals_pruned_total"); n < float64(txs)-1 {
			t.Fatalf("the relay pruned %v arrivals below the checkpoint at cursor %d, want at least %d", n, ckCursor, txs-1)
		}
		// The log after the checkpoint.
		for i := range 10 {
			if _, err := a.db.Update(sealedCityTable(all[i]), engine.Key{fmt.Sprintf("c%06d", i)}, map[string]any{"cityname": fmt.Sprintf("renamed %d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.db.Insert(scEast, map[string]any{"cityident": "new", "cityname": "Nova"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "a pushed the changes after the checkpoint", func() bool { return pending(t, a) == 0 })
		start = time.Now()

		b := newReplica(t, "b", sealedCitiesSchema(), engine.Options{}, client.Options{Sealer: keyring(t, key), CheckpointChanges: -1,
			BackoffBase: 50 * time.Millisecond})
		b.connect(t, rl.url, "sealedgeo", "")
		waitWithin(t, 5*time.Minute, "b synced", func() bool {
			time.Sleep(20 * time.Millisecond)
			return b.c.State().State == client.Synced
		})
		lap("b: bootstrap from the checkpoint + log")
		// A, whose cursor stayed where its first pull left it (the relay
		// does not send a device its own pushes back), is now behind the
		// pruned log too: it bootstraps from the checkpoint as well
		// (SNAPSHOT_REQUIRED, keeping its unsent writes), which the
		// comparison below waits for.
		waitFor(t, "b applied the log after the checkpoint", func() bool {
			time.Sleep(20 * time.Millisecond)
			row, err := b.db.Get(scEast, engine.Key{"new"})
			return err == nil && row["cityname"].Text() == "Nova"
		})
		convergedCRDT(t, a, b)
		lap("b: compared with a (every cell)")
		if errs := reportedErrs(b, client.ErrCheckpointRefused); len(errs) != 0 {
			t.Fatalf("b refused the checkpoint: %v", errs)
		}
		var last client.Event
		progressed := 0
		for _, ev := range b.ev.list() {
			if ev.Type == client.SnapshotProgressed {
				last = ev
				progressed++
			}
		}
		rows := int64(len(all) + len(photos))
		if p := last.Progress; !p.Done || p.RowsApplied != rows || p.RowsTotal != rows || p.TablesDone != 3 {
			t.Fatalf("b's last snapshot progress %+v, want all %d rows of 3 tables", p, rows)
		}
		if progressed < 10 {
			t.Fatalf("b reported progress %d times over %d rows", progressed, rows)
		}
		t.Logf("b: %d progress events", progressed)
		if nw, ne := count(t, b.db, scWest), count(t, b.db, scEast); nw != west || nw+ne != len(all)+1 {
			t.Fatalf("b holds %d+%d cities, want %d+%d", nw, ne, west, len(all)+1-west)
		}
		row, err := b.db.Get(scEast, engine.Key{"new"})
		if err != nil || row["cityname"].Text() != "Nova" {
			t.Fatalf("b lacks the row inserted after the checkpoint: %v, %v", row, err)
		}
		row, err = b.db.Get(scPhotos, engine.Key{"photo07"})
		if err != nil || string(row["photobytes"].Blob()) != string(photos[7]) {
			t.Fatalf("photo07 on b: %v", err)
		}
		b.c.Disconnect()
	})

	t.Run("RelayFiles", func(t *testing.T) {
		seed := uint64(20261203)
		sample := sealedCitiesSample(all, 200, seed)
		if len(sample) != 200 {
			t.Fatalf("chose %d names, want 200", len(sample))
		}
		var names []string
		for _, i := range sample[:10] {
			names = append(names, strconv.Quote(all[i].Name))
		}
		t.Logf("seed %d: 200 names from rows %v... (%s, ...)", seed, sample[:10], strings.Join(names, ", "))
		var needles []needle
		for _, s := range []string{scWest, scEast, scPhotos, "photoident", "photobytes"} {
			needles = append(needles, needle{"table or column name", []byte(s), true})
		}
		for _, s := range scColumns {
			needles = append(needles, needle{"column name", []byte(s), true})
		}
		for _, i := range sample {
			needles = append(needles, needle{"city name", []byte(all[i].Name), true})
			if len(all[i].Name) >= 12 {
				for _, f := range b64Forms([]byte(all[i].Name)) {
					needles = append(needles, needle{"city name in base64", f, false})
				}
			}
		}
		// 50 latitudes as JSON writes them (with a '.', so never base64).
		lats := 0
		for _, i := range sample {
			s := strconv.FormatFloat(all[i].Lat, 'f', -1, 64)
			if len(s) >= 7 && lats < 50 {
				needles = append(needles, needle{"latitude", []byte(s), true})
				lats++
			}
		}
		for _, p := range photos {
			needles = append(needles, needle{"blob bytes", p[:32], false}, needle{"blob bytes", p[2000:2032], false},
				needle{"blob in base64", []byte(base64.StdEncoding.EncodeToString(p)[:48]), true})
			for _, f := range b64Forms(p[1000:1100]) {
				needles = append(needles, needle{"blob in base64", f, false})
			}
		}
		// The base64 forms are found wherever the plaintext starts.
		for k := range 3 {
			enc := []byte(base64.StdEncoding.EncodeToString(append(make([]byte, k+5), photos[0][1000:1100]...)))
			ok := false
			for _, f := range b64Forms(photos[0][1000:1100]) {
				ok = ok || strings.Contains(string(enc), string(f))
			}
			if !ok {
				t.Fatalf("b64Forms misses base64 at offset %d", k+5)
			}
		}

		// The control: the sampled rows and the photos in a plain database.
		p := newReplica(t, "p", sealedCitiesSchema(), engine.Options{}, client.Options{})
		if _, err := p.db.Transact(func(tx *engine.Tx) error {
			for _, i := range sample {
				if _, err := tx.Insert(sealedCityTable(all[i]), sealedCityRow(i, all[i])); err != nil {
					return err
				}
			}
			for i, ph := range photos {
				if _, err := tx.Insert(scPhotos, map[string]any{"photoident": fmt.Sprintf("photo%02d", i), "photobytes": ph}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		p.connect(t, rl.url, "plaincontrol", "")
		waitFor(t, "p pushed", func() bool { return pending(t, p) == 0 && p.c.State().State == client.Synced })

		check := func(when string) {
			start := time.Now()
			found, size := grepFiles(t, dir, needles)
			files, control := 0, 0
			var sizes []string
			for path, hits := range found {
				files++
				if fi, err := os.Stat(path); err == nil {
					sizes = append(sizes, fmt.Sprintf("%s %.1f MB", filepath.Base(path), float64(fi.Size())/1e6))
				}
				if filepath.Base(path) == "plaincontrol.db" {
					control = len(hits)
					seen := map[int]bool{}
					for _, ni := range hits {
						seen[ni] = true
					}
					for ni, n := range needles {
						if n.inPlain && !seen[ni] {
							t.Errorf("%s: the control %s lacks the %s %q: the check is blind to it", when, path, n.what, n.b)
						}
					}
					continue
				}
				for _, ni := range hits {
					t.Errorf("%s: %s contains the %s %q", when, path, needles[ni].what, needles[ni].b)
				}
			}
			if _, ok := found[filepath.Join(dir, "sealedgeo.db")]; !ok || files < 2 {
				t.Fatalf("%s: the relay's files are %v", when, found)
			}
			t.Logf("%s: grepped %d files (%.1f MB: %s) for %d needles in %v; the control shows %d", when, files, float64(size)/1e6,
				strings.Join(sizes, ", "), len(needles), time.Since(start).Round(time.Millisecond), control)
		}
		check("relay running")
		for _, r := range []*replica{a, u, p} {
			r.c.Disconnect()
		}
		rl.stop()
		check("relay stopped")
	})
}
