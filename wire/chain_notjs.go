//go:build !js

package wire

import (
	"crypto/sha256"

	"github.com/replica-sync/replica/model"
)

// Next returns the chain value after appending the ChangeSet of site and
// transactionID to a log whose chain value is c: the first 16 bytes of
// SHA-256(c ‖ site (16 bytes) ‖ transactionID (UTF-8)). The entry's
// identity, not its content, goes in: a transaction resent with fewer
// facts (newer writes superseded some) is the same entry.
//
// Only relays compute chain values (clients compare the ones they are
// sent), so the browser build has no Next: importing crypto/sha256 there
// would link the FIPS 140 module, about 100 KB of code.
func (c Chain) Next(site model.SiteID, transactionID string) Chain {
	sum := sha256.Sum256(chainInput(c, site, transactionID))
	return Chain(sum[:ChainSize])
}
