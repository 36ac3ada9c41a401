package quoteflow

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestInvalidRequestsAre422AndContactNoSupplier(t *testing.T) {
	cases := []struct{ name, body, field string }{
		{"boolean quantity", `{"quantity": true}`, "quantity"},
		{"string quantity", `{"quantity": "2"}`, "quantity"},
		{"fractional quantity", `{"quantity": 2.5}`, "quantity"},
		{"integral float quantity", `{"quantity": 2.0}`, "quantity"},
		{"exponent quantity", `{"quantity": 1e1}`, "quantity"},
		{"null quantity", `{"quantity": null}`, "quantity"},
		{"quantity zero", `{"quantity": 0}`, "quantity"},
		{"quantity 101", `{"quantity": 101}`, "quantity"},
		{"negative quantity", `{"quantity": -1}`, "quantity"},
		{"unknown field", `{"quantity": 2, "url": "http://127.0.0.1:1"}`, "url"},
		{"malformed JSON", `{"quantity": `, "body"},
		{"empty body", ``, "body"},
		{"array body", `[{"quantity": 2}]`, "body"},
		{"null body", `null`, "body"},
		{"two objects", `{} {}`, "body"},
		{"oversized body", `{"sku": "` + strings.Repeat("x", MaxBodyBytes) + `"}`, "body"},
		{"empty sku", `{"sku": ""}`, "sku"},
		{"sku of 65 characters", `{"sku": "` + strings.Repeat("K", 65) + `"}`, "sku"},
		{"numeric sku", `{"sku": 1}`, "sku"},
		{"sku with a byte that is not UTF-8", "{\"sku\": \"KB-\xff\"}", "sku"},
		{"sku with a lone surrogate escape", `{"sku": "KB-\ud800"}`, "sku"},
		{"scenario with a byte that is not UTF-8", "{\"scenario\": \"normal\xc3\"}", "scenario"},
		{"unknown scenario", `{"scenario": "chaos"}`, "scenario"},
		{"trailing comma", `{"sku": "KB-001",}`, "body"},
		{"trailing garbage", `{"sku": "KB-001"} x`, "body"},
		{"repeated field hiding a boolean", `{"quantity": true, "quantity": 2}`, "quantity"},
		{"first wrong field is named", `{"quantity": true, "color": "red"}`, "quantity"},
		{"first wrong field is named, unknown first", `{"color": "red", "quantity": true}`, "color"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := newFake(nil)
			s := newService(t, Config{Transport: fake})
			rec := post(t, s.Handler(), c.body)
			if rec.Code != http.StatusUnprocessableEntity {
				t.Fatalf("status = %d, want 422; body %s", rec.Code, rec.Body)
			}
			got := decodeJSON[struct{ Detail, Field string }](t, rec)
			if got.Field != c.field || !strings.HasPrefix(got.Detail, c.field+": ") {
				t.Errorf("422 names field %q, detail %q; want field %q named in both (%s)", got.Field, got.Detail, c.field, rec.Body)
			}
			if n := fake.TotalCalls(); n != 0 {
				t.Errorf("suppliers were called %d times, want 0", n)
			}
		})
	}
}

func TestDecodeAppliesDefaults(t *testing.T) {
	got, err := DecodeQuoteRequest(strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := (QuoteRequest{SKU: "KB-001", Quantity: 2, Scenario: "normal"}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestDecodeAcceptsTheLimits(t *testing.T) {
	for _, body := range []string{`{"quantity": 1}`, `{"quantity": 100}`, `{"sku": "` + strings.Repeat("K", 64) + `"}`} {
		if _, err := DecodeQuoteRequest(strings.NewReader(body)); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// Text is taken exactly as sent: non-ASCII and escaped characters are kept,
// never replaced by U+FFFD.
func TestDecodeKeepsValidUnicode(t *testing.T) {
	got, err := DecodeQuoteRequest(strings.NewReader(`{"sku": "clé-\u00e9-\ud83d\ude00-\ufffd-\\ud800"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "clé-é-😀-\ufffd-\\ud800"; got.SKU != want {
		t.Errorf("sku = %q, want %q", got.SKU, want)
	}
}

func TestValidateRejectsAnSKUThatIsNotUTF8(t *testing.T) {
	err := QuoteRequest{SKU: "KB-\xff", Quantity: 1, Scenario: "normal"}.Validate()
	var verr *ValidationError
	if !errors.As(err, &verr) || verr.Field != "sku" {
		t.Errorf("err = %v, want a *ValidationError for sku", err)
	}
}

func TestValidationErrorWrapsErrInvalid(t *testing.T) {
	_, err := DecodeQuoteRequest(strings.NewReader(`{"quantity": 0}`))
	var verr *ValidationError
	if !errors.Is(err, ErrInvalid) || !errors.As(err, &verr) || verr.Field != "quantity" {
		t.Fatalf("err = %v, want a *ValidationError for quantity wrapping ErrInvalid", err)
	}
}

func TestQuoteRejectsAnInvalidRequestBeforeCallingSuppliers(t *testing.T) {
	fake := newFake(nil)
	s := newService(t, Config{Transport: fake})
	_, err := s.Quote(testCtx(t), kb(0))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if n := fake.TotalCalls(); n != 0 {
		t.Errorf("suppliers were called %d times, want 0", n)
	}
}
