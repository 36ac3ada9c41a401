package quoteflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxBodyBytes is the largest request body DecodeQuoteRequest reads.
const MaxBodyBytes = 4 << 10

// Scenarios are the provider lab's scenario names a request may ask for.
var Scenarios = []string{"normal", "slow", "broken", "malformed", "flaky", "gzip", "reset", "mismatch",
	"ratelimited", "outage", "costlimited", "tail", "brownout", "capacity"}

// ErrInvalid is wrapped by every validation error: errors.Is(err, ErrInvalid).
var ErrInvalid = errors.New("invalid quote request")

// ValidationError names the field that was rejected and why.
type ValidationError struct {
	Field  string `json:"field"` // "sku", "quantity", "scenario", "body" (the document), or the unknown field
	Reason string `json:"reason"`
}

func (e *ValidationError) Error() string { return e.Field + ": " + e.Reason }

// Is makes errors.Is(err, ErrInvalid) true for every ValidationError.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// DecodeQuoteRequest reads one JSON object, at most MaxBodyBytes, strictly:
// unknown or repeated fields, a quantity that is not a JSON integer (true,
// "2", 2.5), null values and trailing data are rejected. Missing fields take
// the defaults KB-001, 2 and normal. Every error is a *ValidationError; when
// several fields are wrong, the first in the document is named.
func DecodeQuoteRequest(r io.Reader) (QuoteRequest, error) {
	fields, err := readObject(r)
	if err != nil {
		return QuoteRequest{}, err
	}
	req := QuoteRequest{SKU: "KB-001", Quantity: 2, Scenario: "normal"}
	for _, f := range fields {
		if err := setField(&req, f.name, f.raw); err != nil {
			return QuoteRequest{}, err
		}
	}
	return req, req.Validate()
}

// field is one member of the request object, as it was written.
type field struct {
	name string
	raw  json.RawMessage
}

// readObject reads the body as one JSON object and nothing after it, and
// returns its members in document order. A name given twice is rejected:
// decoding into a map would silently keep the last one, so
// {"quantity":true,"quantity":2} would get a boolean past the check.
func readObject(r io.Reader) ([]field, error) {
	body, err := readRequestBody(r, MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	return parseObject(body)
}

// readRequestBody reads at most limit bytes; more is a validation error.
func readRequestBody(r io.Reader, limit int) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, invalid("body", "cannot be read")
	}
	if len(body) > limit {
		return nil, invalid("body", "larger than %d bytes", limit)
	}
	return body, nil
}

// parseObject splits one JSON object into its members, as readObject says.
func parseObject(body []byte) ([]field, error) {
	notObject := invalid("body", "must be a JSON object")
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, notObject
	}
	var fields []field
	for dec.More() {
		tok, err := dec.Token()
		name, isName := tok.(string)
		if err != nil || !isName {
			return nil, notObject
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, notObject
		}
		if slices.ContainsFunc(fields, func(f field) bool { return f.name == name }) {
			return nil, invalid(name, "given more than once")
		}
		fields = append(fields, field{name, raw})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, notObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalid("body", "must hold exactly one JSON object")
	}
	return fields, nil
}

func setField(req *QuoteRequest, name string, raw json.RawMessage) error {
	switch name {
	case "sku":
		return decodeString(raw, name, &req.SKU)
	case "quantity":
		return decodeInteger(raw, name, &req.Quantity)
	case "scenario":
		return decodeString(raw, name, &req.Scenario)
	}
	return invalid(name, "unknown field")
}

func decodeString(raw json.RawMessage, field string, dst *string) error {
	if len(raw) == 0 || raw[0] != '"' {
		return invalid(field, "must be a string")
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return invalid(field, "must be a string")
	}
	if !lossless(raw) {
		return invalid(field, "must be valid UTF-8 text")
	}
	return nil
}

// lossless reports whether the JSON string literal raw decodes to exactly
// what was sent. encoding/json replaces a byte that is not UTF-8, and a lone
// surrogate escape such as \ud800, with U+FFFD; we reject both instead of
// answering about a SKU nobody asked for.
func lossless(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	// raw has been decoded, so every backslash starts a valid escape.
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if raw[i] != 'u' {
			continue // \n, \", \\ and the like
		}
		r := hex4(raw[i+1:])
		i += 4
		if !utf16.IsSurrogate(r) {
			continue
		}
		if r >= 0xdc00 || !bytes.HasPrefix(raw[i+1:], []byte(`\u`)) ||
			utf16.DecodeRune(r, hex4(raw[i+3:])) == utf8.RuneError {
			return false
		}
		i += 6 // the low half of the pair
	}
	return true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(n)
}

// decodeInteger accepts only a JSON integer literal: no bool, string,
// fraction or exponent, so 2.0 and "2" are rejected like true.
func decodeInteger(raw json.RawMessage, field string, dst *int) error {
	n, err := strconv.Atoi(string(raw))
	if err != nil {
		return invalid(field, "must be an integer")
	}
	*dst = n
	return nil
}

// Validate checks the ranges: SKU 1..64 characters of UTF-8, Quantity 1..100,
// Scenario one of Scenarios. It applies no defaults.
func (q QuoteRequest) Validate() error {
	if n := utf8.RuneCountInString(q.SKU); n < 1 || n > 64 {
		return invalid("sku", "must be 1 to 64 characters")
	}
	if !utf8.ValidString(q.SKU) {
		return invalid("sku", "must be valid UTF-8 text")
	}
	if q.Quantity < 1 || q.Quantity > 100 {
		return invalid("quantity", "must be an integer from 1 to 100")
	}
	if !slices.Contains(Scenarios, q.Scenario) {
		return invalid("scenario", "must be one of %v", Scenarios)
	}
	return nil
}
