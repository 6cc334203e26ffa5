//go:build !js

package seal_test

import (
	"errors"
	"fmt"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/seal"
)

// A device seals a ChangeSet for database "acme:vault" with its keyring;
// another opens it with the same key; a device with another key cannot.
func ExampleNewKeyring() {
	raw := seal.GenerateKey() // keep these 32 bytes: Replica stores no key
	key, _ := seal.NewKey(raw)
	ring, _ := seal.NewKeyring(key)

	site := model.SiteID{1}
	h := model.HLC{Wall: 1764374400000, Site: site}
	cs := model.ChangeSet{SiteID: site, TransactionID: h.TransactionID(), HLC: h, Changes: []model.Change{
		{Type: model.ColumnChange, Table: "notes", PK: []model.Value{model.Text("n1")}, Column: "id", Value: model.Text("n1"), HLC: h}}}
	sealed, _ := seal.SealChangeSet(ring, "acme:vault", &cs)
	fmt.Println(sealed.Sealed(), len(sealed.Changes))

	opened, err := seal.OpenChangeSet(ring, "acme:vault", &sealed)
	fmt.Println(err, opened.Changes[0].Value)

	other, _ := seal.NewKey(seal.GenerateKey())
	otherRing, _ := seal.NewKeyring(other)
	_, err = seal.OpenChangeSet(otherRing, "acme:vault", &sealed)
	fmt.Println(errors.Is(err, seal.ErrDecryptFailed))
	// Output:
	// true 0
	// <nil> "n1"
	// true
}
