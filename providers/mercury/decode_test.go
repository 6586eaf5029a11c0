package mercury

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/providers/providertest"
)

func recordingSuite() providertest.Suite {
	return providertest.Suite{
		Provider: Name,
		New:      func(c *http.Client) providers.Provider { return New(c) },
		BaseURL:  func(root string) string { return root + "/api/v1" },
	}
}

// TestDecodeAgreesWithEncodingJSON decodes every answer the simulator
// gives the adapter into the adapter's own types, with wire.Decode and with
// encoding/json, and requires the same values.
func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	providertest.CheckDecoding(t, recordingSuite(), 1500, []string{"/api/v1/accounts", "/api/v1/account/{id}/transactions"}, answerKind, answerType)
}

// answerKind names the kind of answer at path.
func answerKind(path string) string {
	if strings.HasPrefix(path, "/api/v1/account/") && strings.HasSuffix(path, "/transactions") {
		return "/api/v1/account/{id}/transactions"
	}
	return path
}

// answerType is a fresh value of the type the adapter decodes an answer
// of kind into (nil: unknown).
func answerType(kind string) any {
	switch kind {
	case "/api/v1/accounts", "/api/v1/credit":
		return new(accountsResponse)
	case "/api/v1/account/{id}/transactions":
		return new(transactionsResponse)
	}
	return nil
}

// transactionsPage returns one full /account/{id}/transactions answer
// (PageSize rows) as the simulator sends it.
func transactionsPage(tb testing.TB) *wire.Response {
	tb.Helper()
	r := providertest.FirstPage(tb, recordingSuite(), 6000, func(path string) bool { return strings.HasSuffix(path, "/transactions") })
	var resp transactionsResponse
	if err := json.Unmarshal(r.Body, &resp); err != nil {
		tb.Fatal(err)
	}
	if len(resp.Transactions) != PageSize {
		tb.Fatalf("transactions page has %d rows, want %d", len(resp.Transactions), PageSize)
	}
	return r
}

// BenchmarkDecodeTransactionsPage measures decoding one full (PageSize
// rows) account transactions page.
func BenchmarkDecodeTransactionsPage(b *testing.B) {
	r := transactionsPage(b)
	b.SetBytes(int64(len(r.Body)))
	b.ReportAllocs()
	for b.Loop() {
		var resp transactionsResponse
		if err := wire.Decode(name, r, &resp); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*PageSize), "ns/row")
}

// reflectResponse is transactionsResponse decoded by reflection, without
// its UnmarshalJSONFrom.
type reflectResponse transactionsResponse

// pageVariants are transactions pages that stray from what Mercury sends:
// nulls, repeated and escaped names, other kinds of values, broken JSON.
var pageVariants = []string{
	`{"total":1,"transactions":[{"id":"a","accountId":"x","amount":-1.50,"status":"sent","kind":"other","createdAt":"2026-01-02T03:04:05.123456Z","postedAt":"2026-01-03T00:00:00Z","counterpartyName":"A","mercuryCategory":"FuelAndGas"}]}`,
	`{"transactions":[{"id":null,"accountId":null,"status":null,"kind":null,"createdAt":null,"postedAt":null,"counterpartyName":null,"counterpartyNickname":null,"bankDescription":null,"checkNumber":null,"mercuryCategory":null,"currencyExchangeInfo":null}]}`,
	`{"transactions":[{"amount":null}]}`,
	`{"transactions":[{"id":"a","id":"b","bankDescription":"x","bankDescription":null,"checkNumber":"1","checkNumber":"2","postedAt":"2026-01-03T00:00:00Z","postedAt":"2026-01-04T00:00:00Z","currencyExchangeInfo":{"feeAmount":1.5},"currencyExchangeInfo":{}}]}`,
	`{"transactions":[{"currencyExchangeInfo":{"feeAmount":-0.25,"other":[1,{"a":null}]}}],"total":7,"total":8}`,
	`{"transactions":[{"\u0069d":"escaped name","ID":"other case","Id":"x","merchant":{"id":"m","amount":3},"relatedTransactions":[],"attachments":[{"x":1}]}]}`,
	`{"transactions":[{"counterpartyName":"A\"B\u00e9\n","bankDescription":"\ud83d\ude00","kind":"\u0000"}]}`,
	"{\"transactions\":[{\"counterpartyName\":\"bad \xff utf8\",\"bankDescription\":\"\xc3\",\"id\xfe\":\"name\"}]}",
	`{"transactions":[null,{"id":"after null"},null]}`,
	`{"transactions":[]}`,
	`{"transactions":null}`,
	`{"transactions":{}}`,
	`{"transactions":[5]}`,
	`{"transactions":[[]]}`,
	`{"transactions":[{"id":5}]}`,
	`{"transactions":[{"status":{}}]}`,
	`{"transactions":[{"createdAt":"yesterday"}]}`,
	`{"transactions":[{"createdAt":5}]}`,
	`{"transactions":[{"createdAt":"2026-01-02T03:04:05+02:00","postedAt":"2026-01-02T03:04:05.1-07:30"}]}`,
	`{"transactions":[{"createdAt":"2026-01-02 03:04:05Z"}]}`,
	`{"transactions":[{"amount":"5"}]}`,
	`{"transactions":[{"amount":1e2},{"amount":-0.10},{"amount":1E-3}]}`,
	`{"transactions":[{"postedAt":[]}]}`,
	`{"transactions":[{"bankDescription":true}]}`,
	`{"transactions":[{"currencyExchangeInfo":"x"}]}`,
	`{"total":"3","transactions":[]}`,
	`{"total":3.5}`,
	`null`,
	`[]`,
	`"page"`,
	`{}`,
	`{"transactions":[{"id":"a"}`,
	`{"transactions":[{"id":"a",}]}`,
	`{"transactions":[{"id" "a"}]}`,
	`{"transactions":[{"id":"a"}]} trailing`,
	``,
	" { \"transactions\" : [ { \"id\" : \"a\" , \"x\" : [ 1 , { \"y\" : \"}]\\\"{[\" } ] ,\n\t\"status\"\r: \"sent\" } , { } ] } ",
	`{"transactions":[{"note":"\\","id":"after a backslash","bankDescription":"ends \\\\","kind":"q\"uote"}]}`,
	`{"transactions":[{"a":true,"b":false,"c":-1.5e+10,"d":0,"e":null,"f":{},"g":[],"id":"x"}]}`,
	`{"transactions":[{"id":"first","counterpartyNickname":"n","currencyExchangeInfo":{"feeAmount":2},"status":"sent"}]}`,
	`{"transactions":[{"id":"first","counterpartyNickname":"n","postedAt":"2026-01-01T00:00:00Z","createdAt":"bad"}]}`,
	`{"transactions":[{"id":"x","amount":-0},{"id":"y","amount":12345678901234567890.123456789}]}`,
	`{"transactions":[{"id":"x"},{"id":"y","status":7},{"id":"z"}]}`,
}

// TestDecodeAgreesWithReflection decodes the simulator's page and pages
// that stray from it with the page's own decoding and by reflection, and
// requires the same outcome: an error for both or the same values.
func TestDecodeAgreesWithReflection(t *testing.T) {
	bodies := append([]string{string(transactionsPage(t).Body)}, pageVariants...)
	for _, body := range bodies {
		checkDecodeAgrees(t, []byte(body))
	}
	// Into a value already holding rows, as the reflective decoding merges.
	prefilled := func() transactionsResponse {
		status, nick := "old", "nick"
		txs := make([]transaction, 2, 4)
		txs[0] = transaction{ID: "old", Status: status, CounterpartyNickname: &nick}
		txs[1] = transaction{ID: "second", Kind: "kept"}
		return transactionsResponse{Total: 9, Transactions: txs}
	}
	for _, body := range []string{
		`{"transactions":[{"id":"new"},null]}`,
		// Pointers set before are written through, as by reflection.
		`{"transactions":[{"counterpartyNickname":"changed","currencyExchangeInfo":{"feeAmount":3}}]}`,
	} {
		got, want := prefilled(), reflectResponse(prefilled())
		errGot := wire.Decode(name, &wire.Response{Status: http.StatusOK, Body: []byte(body)}, &got)
		errWant := wire.Decode(name, &wire.Response{Status: http.StatusOK, Body: []byte(body)}, &want)
		if errGot != nil || errWant != nil || !reflect.DeepEqual(got, transactionsResponse(want)) {
			t.Fatalf("%s into a filled value: got %+v (%v), want %+v (%v)", body, got, errGot, want, errWant)
		}
	}
}

// FuzzDecodeAgreesWithReflection is TestDecodeAgreesWithReflection on
// generated pages.
func FuzzDecodeAgreesWithReflection(f *testing.F) {
	for _, body := range pageVariants {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkDecodeAgrees(t, body) })
}

// checkDecodeAgrees decodes body with wire.Decode into a
// transactionsResponse and a reflectResponse, and fails unless both fail
// with the same message or both give the same values.
func checkDecodeAgrees(t *testing.T, body []byte) {
	t.Helper()
	var got transactionsResponse
	var want reflectResponse
	errGot := wire.Decode(name, &wire.Response{Status: http.StatusOK, Body: body}, &got)
	errWant := wire.Decode(name, &wire.Response{Status: http.StatusOK, Body: body}, &want)
	if (errGot == nil) != (errWant == nil) || errGot != nil &&
		errGot.Error() != strings.ReplaceAll(errWant.Error(), "reflectResponse", "transactionsResponse") {
		t.Fatalf("%.200q: error %v, by reflection %v", body, errGot, errWant)
	}
	if errGot == nil && !reflect.DeepEqual(got, transactionsResponse(want)) {
		t.Fatalf("%.200q:\n got %+v\nwant %+v", body, got, want)
	}
}

// TestDecodeReadsEveryField checks that the page's own decoding reads
// every field of transaction by its JSON name (a field it did not know
// would be skipped silently).
func TestDecodeReadsEveryField(t *testing.T) {
	samples := map[reflect.Type]string{
		reflect.TypeFor[string]():        `"x"`,
		reflect.TypeFor[*string]():       `"x"`,
		reflect.TypeFor[domain.Money]():  `1.5`,
		reflect.TypeFor[time.Time]():     `"2026-01-02T03:04:05Z"`,
		reflect.TypeFor[*time.Time]():    `"2026-01-02T03:04:05Z"`,
		reflect.TypeFor[*exchangeInfo](): `{"feeAmount":1}`,
	}
	typ := reflect.TypeFor[transaction]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		sample, ok := samples[f.Type]
		if !ok {
			t.Fatalf("field %s: no sample of %v", f.Name, f.Type)
		}
		body := `{"transactions":[{"` + tag + `":` + sample + `}]}`
		var resp transactionsResponse
		if err := wire.Decode(name, &wire.Response{Status: http.StatusOK, Body: []byte(body)}, &resp); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if reflect.ValueOf(resp.Transactions[0]).Field(i).IsZero() {
			t.Errorf("field %s (%q) not read", f.Name, tag)
		}
	}
}
