package openapitest_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/finsync/finsync/api/openapi/openapitest"
	"github.com/finsync/finsync/providers/all"
)

// BenchmarkValidateTransactionsPage measures one check of a 50-transaction
// page, the typical cost each HTTP test pays per response.
func BenchmarkValidateTransactionsPage(b *testing.B) {
	v := openapitest.New(b, openapitest.V2(b, all.NewRegistry().Profiles()))
	txs := make([]any, 50)
	for i := range txs {
		txs[i] = v2Transaction()
	}
	body := mustJSONB(b, obj{"transactions": txs, "pageInfo": pageInfo()})
	req := httptest.NewRequest(http.MethodGet, "/v2/transactions", nil)
	header := limitedHeaders()
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(req, http.StatusOK, header, body); err != nil {
			b.Fatal(err)
		}
	}
}
