package provider

import "time"

// Suppliers lists the simulated suppliers in the order /stats reports them.
var Suppliers = [...]string{"atlas", "boreal", "cedar"}

// supplierIndex returns the position of name in Suppliers, or -1.
func supplierIndex(name string) int {
	for i, s := range Suppliers {
		if s == name {
			return i
		}
	}
	return -1
}

// baseLatency is each supplier's fixed think time before it answers
// (multiplied by Options.LatencyScale).
var baseLatency = [len(Suppliers)]time.Duration{
	40 * time.Millisecond, // atlas
	30 * time.Millisecond, // boreal
	50 * time.Millisecond, // cedar
}

// Quote is the body of a supplier's 200 answer; clients reject any other field.
type Quote struct {
	Supplier      string `json:"supplier"`
	SKU           string `json:"sku"`
	UnitCents     int    `json:"unit_cents"`
	ShippingCents int    `json:"shipping_cents"`
	Stock         int    `json:"stock"`
}

type quoteKey struct{ supplier, sku string }

// catalog holds every offer. For KB-001 at quantity 2 boreal is the cheapest
// in-stock offer (2848), atlas second (3098), and cedar (stock 1) is filtered;
// at quantity 1 all three qualify and cedar is cheapest (1299).
var catalog = map[quoteKey]Quote{
	{"atlas", "KB-001"}:  {"atlas", "KB-001", 1299, 500, 10},
	{"boreal", "KB-001"}: {"boreal", "KB-001", 1199, 450, 8},
	{"cedar", "KB-001"}:  {"cedar", "KB-001", 999, 300, 1},

	{"atlas", "KB-002"}:  {"atlas", "KB-002", 2450, 600, 3},
	{"boreal", "KB-002"}: {"boreal", "KB-002", 2390, 650, 0},
	{"cedar", "KB-002"}:  {"cedar", "KB-002", 2500, 0, 20},

	{"atlas", "MS-010"}:  {"atlas", "MS-010", 1890, 350, 25},
	{"boreal", "MS-010"}: {"boreal", "MS-010", 1790, 400, 12},
	{"cedar", "MS-010"}:  {"cedar", "MS-010", 1850, 300, 5},
}

// otherSKU returns a catalog SKU different from sku (for the mismatch scenario).
func otherSKU(sku string) string {
	if sku == "KB-001" {
		return "KB-002"
	}
	return "KB-001"
}
