//go:build js

package wire

import (
	"crypto/sha256"

	"github.com/replica-sync/replica/model"
)

// Next is chain_notjs.go's, for this package's tests in the browser build
// (which has no Next of its own; TestChainNext pins the values).
func (c Chain) Next(site model.SiteID, transactionID string) Chain {
	sum := sha256.Sum256(chainInput(c, site, transactionID))
	return Chain(sum[:ChainSize])
}
