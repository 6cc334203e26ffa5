//go:build !js

package relay

import "github.com/replica-sync/replica/timing"

// Timers is the relay's source of timers: a connection's idle timeout and
// handshake deadline, its rate-limit waits, the shutdown deadline, the
// maintenance loop and the idle-database sweep, and the times they are
// measured from (Config.Timers). It is timing.Clock, shared with the
// client (client.Options.Clock): production uses SystemTimers; a
// simulator drives the relay with a clock of its own. Implementations must
// be safe for concurrent use.
type Timers = timing.Clock

// Timer is a one-shot timer of Timers (timing.Timer).
type Timer = timing.Timer

// SystemTimers are the timers of package time, the default Timers
// (timing.System).
type SystemTimers = timing.System
