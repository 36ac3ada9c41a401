package quoteflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxBasketBodyBytes is the largest basket body DecodeBasketRequest reads.
const MaxBasketBodyBytes = 16 << 10

// DecodeBasketRequest reads a basket as strictly as DecodeQuoteRequest reads
// a quote: {"items":[{"sku","quantity"}, ...], "scenario"}, 1 to
// MaxBasketLines items, each with the single quote's defaults and ranges. An
// error names the field, e.g. items[3].quantity.
func DecodeBasketRequest(r io.Reader) (BasketRequest, error) {
	body, err := readRequestBody(r, MaxBasketBodyBytes)
	if err != nil {
		return BasketRequest{}, err
	}
	fields, err := parseObject(body)
	if err != nil {
		return BasketRequest{}, err
	}
	req := BasketRequest{Scenario: "normal"}
	seenItems := false
	for _, f := range fields {
		switch f.name {
		case "items":
			seenItems = true
			if req.Items, err = decodeItems(f.raw); err != nil {
				return BasketRequest{}, err
			}
		case "scenario":
			if err := decodeString(f.raw, "scenario", &req.Scenario); err != nil {
				return BasketRequest{}, err
			}
		default:
			return BasketRequest{}, invalid(f.name, "unknown field")
		}
	}
	if !seenItems {
		return BasketRequest{}, invalid("items", "is required")
	}
	return req, req.Validate()
}

// decodeItems reads the items array, each element as strictly as a quote.
func decodeItems(raw json.RawMessage) ([]BasketItem, error) {
	var elems []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
		return nil, invalid("items", "must be an array of objects")
	}
	items := make([]BasketItem, 0, len(elems))
	for i, elem := range elems {
		item, err := decodeItem(elem)
		if err != nil {
			return nil, inItem(i, err)
		}
		items = append(items, item)
	}
	return items, nil
}

func decodeItem(raw json.RawMessage) (BasketItem, error) {
	fields, err := parseObject(raw)
	if err != nil {
		return BasketItem{}, err
	}
	q := QuoteRequest{SKU: "KB-001", Quantity: 2}
	for _, f := range fields {
		if f.name == "scenario" {
			return BasketItem{}, invalid(f.name, "unknown field (the scenario is the basket's)")
		}
		if err := setField(&q, f.name, f.raw); err != nil {
			return BasketItem{}, err
		}
	}
	return BasketItem{SKU: q.SKU, Quantity: q.Quantity}, nil
}

// inItem renames a field error to the item's field: items[i].sku, or items[i]
// for the item as a whole.
func inItem(i int, err error) error {
	var verr *ValidationError
	if !errors.As(err, &verr) {
		return err
	}
	field := fmt.Sprintf("items[%d]", i)
	if verr.Field != "body" {
		field += "." + verr.Field
	}
	return &ValidationError{Field: field, Reason: verr.Reason}
}

// Validate checks the basket's ranges: 1..MaxBasketLines items, each as
// QuoteRequest.Validate says, and the scenario.
func (b BasketRequest) Validate() error {
	if len(b.Items) < 1 || len(b.Items) > MaxBasketLines {
		return invalid("items", "must hold 1 to %d items", MaxBasketLines)
	}
	for i, item := range b.Items {
		q := QuoteRequest{SKU: item.SKU, Quantity: item.Quantity, Scenario: b.Scenario}
		if err := q.Validate(); err != nil {
			var verr *ValidationError
			if errors.As(err, &verr) && verr.Field == "scenario" {
				return err
			}
			return inItem(i, err)
		}
	}
	return nil
}
