// Package rawvalue lets the module's storage codecs take apart and rebuild
// a model.Value without the checks of model's public constructors.
//
// A model.Value keeps its invariants (a JSON value holds valid, compact
// JSON text) by having only checked constructors. The engine's key and
// record codecs decode values they encoded themselves, and its coercion of
// remote values builds JSON text it wrote: re-validating that text on every
// read would cost a scan and an allocation per cell. This package, which
// only the module's own packages can import, hands them the unchecked
// constructor instead.
//
// Package model's init stores the functions here, typed as any because
// this package cannot name model.Value (model imports it). A user asserts
// them once, at package initialization:
//
//	var rawValue = rawvalue.Make.(func(model.Kind, string) model.Value)
package rawvalue

var (
	// Make is a func(kind model.Kind, s string) model.Value returning the
	// text, JSON or blob Value of kind k holding s unchanged. s must be
	// what String returned for a Value of that kind: valid compact JSON
	// for KindJSON. Other kinds are not supported.
	Make any
	// String is a func(model.Value) string returning the bytes of a text,
	// JSON or blob Value without copying them, "" for other kinds.
	String any
)
