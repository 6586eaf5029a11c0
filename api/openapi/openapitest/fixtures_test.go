package openapitest_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"
)

// Fixed identifiers used by the fixtures.
const (
	reqID   = "5b0c7b8e-8f5a-4c37-9d1e-2f3a4b5c6d7e"
	userID  = "0d9e7f1c-1a2b-4c3d-8e4f-5a6b7c8d9e0f"
	acctID  = "1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b"
	connID  = "2a3b4c5d-6e7f-4809-9a1b-2c3d4e5f6a7b"
	txID    = "3b4c5d6e-7f80-4910-8b2c-3d4e5f6a7b8c"
	catID   = "4c5d6e7f-8091-4a21-9c3d-4e5f6a7b8c9d"
	groupID = "5d6e7f80-91a2-4b32-8d4e-5f6a7b8c9d0e"
	secID   = "6e7f8091-a2b3-4c43-9e5f-6a7b8c9d0e1f"
	ruleID  = "7f8091a2-b3c4-4d54-8f6a-7b8c9d0e1f2a"
	stamp   = "2026-11-22T06:00:00Z"
)

// obj is a JSON object fixture.
type obj = map[string]any

// absent marks a key to delete in edit.
type absent struct{}

// edit returns a deep copy of o with the dotted paths set (or deleted
// with absent{}). Numeric path parts index arrays.
func edit(o obj, changes ...any) obj {
	out := clone(o).(obj)
	for i := 0; i+1 < len(changes); i += 2 {
		setPath(out, strings.Split(changes[i].(string), "."), changes[i+1])
	}
	return out
}

func clone(v any) any {
	switch v := v.(type) {
	case obj:
		out := make(obj, len(v))
		for k, e := range v {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = clone(e)
		}
		return out
	}
	return v
}

func setPath(node any, path []string, value any) {
	key := path[0]
	switch n := node.(type) {
	case obj:
		if len(path) > 1 {
			setPath(n[key], path[1:], value)
			return
		}
		if _, ok := value.(absent); ok {
			delete(n, key)
			return
		}
		n[key] = value
	case []any:
		var i int
		for _, c := range key {
			i = i*10 + int(c-'0')
		}
		if len(path) > 1 {
			setPath(n[i], path[1:], value)
			return
		}
		n[i] = value
	}
}

// list is a JSON array fixture; list() is [] rather than null.
func list(items ...any) []any { return append([]any{}, items...) }

func mustJSONB(b *testing.B, v any) []byte {
	b.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// publicHeaders are the headers of a response to an unauthenticated route.
func publicHeaders() http.Header {
	return http.Header{
		"Content-Type": {"application/json; charset=utf-8"},
		"X-Request-Id": {reqID},
	}
}

// limitedHeaders are the headers of a response that went through the
// rate limiter.
func limitedHeaders() http.Header {
	h := publicHeaders()
	h.Set("X-RateLimit-Limit", "200")
	h.Set("X-RateLimit-Remaining", "199")
	h.Set("X-RateLimit-Reset", "1795327260")
	return h
}

// headersWith returns h with the given header set, or deleted when the
// value is empty.
func headersWith(h http.Header, name, value string) http.Header {
	out := maps.Clone(h)
	if value == "" {
		out.Del(name)
		return out
	}
	out.Set(name, value)
	return out
}

func v2Account() obj {
	return obj{
		"id": acctID, "providerAccountId": nil, "bankConnectionId": nil, "bankConnectionStatus": nil,
		"provider": "manual", "institutionName": "Home", "name": "Visa", "mask": "4242",
		"type": "credit", "subtype": "credit card", "currency": "USD",
		"currentBalance": 410.5, "availableBalance": nil, "balanceAsOf": stamp,
		"status": "active", "closedAt": nil, "duplicateOfAccountId": nil,
		"liability": obj{
			"type": "credit", "minimumPaymentAmount": 25, "nextPaymentDueDate": "2026-12-15",
			"isOverdue": false, "interestRateType": "fixed",
			"aprs": list(obj{"aprType": "purchase_apr", "aprPercentage": 24.99}),
			"propertyAddress": obj{
				"street": "1 Main St", "city": "Springfield", "region": "IL",
				"postalCode": "62701", "country": "US",
			},
		},
	}
}

func v2Transaction() obj {
	return obj{
		"id": txID, "bankConnectionId": connID, "bankAccountId": acctID, "provider": "plaid",
		"providerId": "tx_123", "status": "posted", "summary": "Coffee", "amount": -4.5,
		"currency": "USD", "authorizedDate": "2026-11-20", "postedDate": "2026-11-21",
		"merchantName": "Blue Bottle", "categoryId": catID, "categorySource": "provider", "categoryRuleId": nil,
		"fees": nil, "feeType": nil,
		"netAmount": nil, "subAccount": nil, "paymentChannel": "in store", "checkNumber": nil,
		"originalDescription": "BLUE BOTTLE #12", "source": nil, "transferId": nil,
	}
}

func v2BankConnection() obj {
	return obj{
		"id": connID, "provider": "plaid", "institutionName": "Chase", "institutionLogoUrl": nil,
		"status": "error", "lastSyncedAt": stamp, "lastProviderErrorCode": "ITEM_LOGIN_REQUIRED",
		"lastProviderErrorMessage": "login required", "reconnectUrl": "https://example.com/reconnect",
		"nextSyncAt": nil,
		"health": obj{"lastSuccessfulSyncAt": stamp, "nextSyncAt": nil, "breaker": "open",
			"quotaRemaining": nil, "consecutiveFailures": 3, "heldBackUntil": stamp, "heldBackReason": "breaker_open",
			"consentExpiresAt": stamp, "action": "wait"},
	}
}

func v2Category() obj {
	return obj{
		"id": catID, "provider": "plaid", "providerId": "FOOD_AND_DRINK_COFFEE", "name": "Coffee",
		"group": "Food and drink", "categoryGroupId": groupID, "description": "Coffee shops",
	}
}

func v2Security() obj {
	return obj{"id": secID, "symbol": "VTI", "name": "Vanguard Total", "type": "etf", "closePrice": 250.1, "currency": "USD"}
}

func v2Holding() obj {
	return obj{
		"id": txID, "accountId": acctID, "securityId": secID, "quantity": 10, "costBasis": nil,
		"institutionPrice": 250.1, "institutionValue": 2501, "currency": "USD",
		"priceAsOf": "2026-11-21", "provider": "plaid",
	}
}

func v2InvestmentTransaction() obj {
	return obj{
		"id": txID, "accountId": acctID, "securityId": nil, "type": "cash", "subtype": "dividend",
		"date": "2026-11-01", "quantity": 0, "price": 0, "amount": 12.34, "fees": nil,
		"currency": "USD", "description": "Dividend", "provider": "plaid",
	}
}

func v2Rule() obj {
	return obj{
		"id": ruleID,
		"conditions": list(
			obj{"field": "MerchantName", "operator": "contains", "value": "coffee"},
			obj{"field": "Amount", "operator": "between", "value": list(-10, -1)},
		),
		"outcomes": list(
			obj{"action": "updateTransaction", "field": "Category", "value": obj{"id": catID, "value": "Coffee"}},
			obj{"action": "updateTransaction", "field": "MerchantName", "value": "Blue Bottle"},
			obj{"action": "hideTransaction", "value": true},
		),
		"priority": 10, "allowedAccountIds": list(acctID), "createdAt": stamp, "updatedAt": stamp,
		"archivedAt": nil,
	}
}

func pageInfo() obj { return obj{"nextCursor": nil, "hasMore": false} }

func v2Error(code string) obj { return obj{"error": obj{"code": code, "message": "something"}} }

func v1Account() obj {
	return obj{
		"id": "acc_1", "bankConnectionId": connID, "name": "Checking",
		"balance":  obj{"current": 100.25, "available": 90, "limit": nil, "interestRate": nil},
		"currency": "USD", "mask": "0000", "type": "depository", "subtype": "checking",
		"provider": "Plaid", "payment": nil, "loanOrigination": nil,
	}
}

func v1Transaction() obj {
	return obj{
		"id": "tx_1", "summary": "Coffee", "createdAt": stamp, "postedAt": nil, "amount": -4.5,
		"currency": "USD", "isPending": true, "subAccount": nil, "merchantName": nil,
		"categoryId": "cat_1", "fees": nil, "feeType": nil, "netAmount": nil, "source": nil,
		"type": nil, "provider": "Stripe", "accountId": "acc_1",
	}
}

func v1Holding() obj {
	return obj{
		"id": "acc_1:sec_1", "accountId": "acc_1", "securityId": "sec_1", "quantity": 3,
		"costBasis": 10, "institutionPrice": 5, "institutionValue": 15, "currency": "USD",
		"priceAsOf": nil, "provider": "Plaid",
	}
}

func v1Security() obj { return obj{"id": "sec_1", "symbol": nil, "name": "Cash", "type": "cash"} }

func listMeta() obj { return obj{"count": 1, "totalCount": 1, "hasMore": false} }
