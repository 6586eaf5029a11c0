package mercury

import (
	"bytes"
	"errors"
	"reflect"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/finsync/finsync/domain"
)

// UnmarshalJSONFrom decodes a transactions page as the JSON v2
// implementation decodes it by reflection with the options wire.Decode
// gives it (members matched by their exact names, the last of a repeated
// name winning, unknown members skipped, a null leaving a value as it
// is), at well under its cost: a page holds a thousand rows of some thirty
// members each, most of them unknown to the adapter, and finding each name
// in the struct's field maps was a third of a page's decoding. Values of
// the kinds Mercury sends (a string for a string, null or a string for a
// *string or a time, a number for an amount) are read directly, and
// repeated short strings (account ids, statuses, names) are shared as the
// reflective decoder shares them; any other value is decoded by
// jsonv2.UnmarshalDecode, as the reflective decoder would decode it, and
// errors read as the reflective decoder's. Caveat: a new field of
// transaction must be added to member too, or it is skipped.
func (r *transactionsResponse) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '{' {
		return errors.ErrUnsupported // null and non-objects: as by reflection
	}
	return readObject(dec, func(name []byte) error {
		switch string(name) {
		case "total":
			return jsonv2.UnmarshalDecode(dec, &r.Total)
		case "transactions":
			return r.readTransactions(dec)
		}
		return dec.SkipValue()
	})
}

// readTransactions decodes the transactions array, reusing the slice's
// room as the reflective decoder does (an empty array gives an empty,
// non-nil slice), or making room for up to a page of rows when it has none
// and the total is known; null and other values are left to
// jsonv2.UnmarshalDecode.
func (r *transactionsResponse) readTransactions(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '[' {
		return jsonv2.UnmarshalDecode(dec, &r.Transactions)
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	txs := r.Transactions[:0]
	if cap(txs) == 0 && r.Total > 0 {
		// The rows of a page (total came first, as Mercury writes it): a
		// row is large, and growing the slice row by row copied them over
		// and over.
		txs = make([]transaction, 0, min(r.Total, PageSize))
	}
	strs := make(stringCache)
	for dec.PeekKind() != ']' {
		if len(txs) < cap(txs) {
			txs = txs[:len(txs)+1]
		} else {
			txs = append(txs, transaction{})
		}
		err := txs[len(txs)-1].read(dec, strs)
		r.Transactions = txs
		if err != nil {
			return err
		}
	}
	if len(txs) == 0 {
		txs = []transaction{}
	}
	r.Transactions = txs
	_, err := dec.ReadToken()
	return err
}

// read decodes one transaction object into t; null and other values are
// left to jsonv2.UnmarshalDecode.
func (t *transaction) read(dec *jsontext.Decoder, strs stringCache) error {
	if dec.PeekKind() != '{' {
		return jsonv2.UnmarshalDecode(dec, t)
	}
	return readObject(dec, func(name []byte) error { return t.member(dec, name, strs) })
}

// readObject reads an object, calling member with each member's name (its
// text, unescaped) to read or skip the value that follows.
func readObject(dec *jsontext.Decoder, member func(name []byte) error) error {
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return err
		}
		// A name with invalid UTF-8 matches no field, replaced or not.
		text := name[1 : len(name)-1]
		if bytes.IndexByte(text, '\\') >= 0 {
			text = unquote(name)
		}
		if err := member(text); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

// member decodes the value of the member named name into its field, or
// skips it.
func (t *transaction) member(dec *jsontext.Decoder, name []byte, strs stringCache) error {
	switch string(name) {
	case "id":
		return readString(dec, &t.ID, nil)
	case "accountId":
		return readString(dec, &t.AccountID, strs)
	case "amount":
		return readMoney(dec, &t.Amount)
	case "status":
		return readString(dec, &t.Status, strs)
	case "kind":
		return readString(dec, &t.Kind, strs)
	case "createdAt":
		return readTime(dec, &t.CreatedAt)
	case "postedAt":
		return readTimePtr(dec, &t.PostedAt)
	case "counterpartyName":
		return readString(dec, &t.CounterpartyName, strs)
	case "counterpartyNickname":
		return readStringPtr(dec, &t.CounterpartyNickname, strs)
	case "bankDescription":
		return readStringPtr(dec, &t.BankDescription, strs)
	case "checkNumber":
		return readStringPtr(dec, &t.CheckNumber, strs)
	case "mercuryCategory":
		return readStringPtr(dec, &t.MercuryCategory, strs)
	case "currencyExchangeInfo":
		if null, err := readNull(dec); null || err != nil {
			t.CurrencyExchangeInfo = nil
			return err
		}
		return jsonv2.UnmarshalDecode(dec, &t.CurrencyExchangeInfo)
	}
	return dec.SkipValue()
}

// stringCache shares the strings of one page's repeated values (nil
// shares none). It holds at most maxCachedStrings.
type stringCache map[string]string

// maxCachedStrings bounds a page's stringCache.
const maxCachedStrings = 1024

// get returns b as a string, the one already made when b was seen before.
func (c stringCache) get(b []byte) string {
	if c == nil {
		return string(b)
	}
	if s, ok := c[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(c) < maxCachedStrings {
		c[s] = s
	}
	return s
}

// unquote returns the text of the JSON string v: its inside when it has
// no escapes and is valid UTF-8, else its decoding, with invalid UTF-8
// replaced by U+FFFD as the reflective decoder does.
func unquote(v jsontext.Value) []byte {
	if s := v[1 : len(v)-1]; bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return s
	}
	b, _ := jsontext.AppendUnquote(nil, v) // the only error left is invalid UTF-8
	return b
}

// readNull reports whether the next value is null, and consumes it if so.
func readNull(dec *jsontext.Decoder) (bool, error) {
	if dec.PeekKind() != 'n' {
		return false, nil
	}
	_, err := dec.ReadToken()
	return true, err
}

// readString decodes a string into dst (made by strs).
func readString(dec *jsontext.Decoder, dst *string, strs stringCache) error {
	if dec.PeekKind() != '"' {
		return jsonv2.UnmarshalDecode(dec, dst)
	}
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	*dst = strs.get(unquote(v))
	return nil
}

// readStringPtr decodes null (nil) or a string into dst, reusing the
// string dst points to, as the reflective decoder does.
func readStringPtr(dec *jsontext.Decoder, dst **string, strs stringCache) error {
	if null, err := readNull(dec); null || err != nil {
		*dst = nil
		return err
	}
	if *dst == nil {
		*dst = new(string)
	}
	return readString(dec, *dst, strs)
}

// timeType and moneyType name the types of errors of the direct reads.
var (
	timeType  = reflect.TypeFor[time.Time]()
	moneyType = reflect.TypeFor[domain.Money]()
)

// valueError is the error of value v, just read, that does not decode
// into type t, as the reflective decoder reports it.
func valueError(dec *jsontext.Decoder, v jsontext.Value, t reflect.Type, err error) error {
	return &jsonv2.SemanticError{
		ByteOffset: dec.InputOffset() - int64(len(v)), JSONPointer: dec.StackPointer(),
		JSONKind: v.Kind(), GoType: t, Err: err,
	}
}

// readTime decodes a time (time.Time.UnmarshalText, what wire.Decode's
// loose RFC 3339 option accepts) into dst.
func readTime(dec *jsontext.Decoder, dst *time.Time) error {
	if dec.PeekKind() != '"' {
		return jsonv2.UnmarshalDecode(dec, dst)
	}
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	var tt time.Time
	if err := tt.UnmarshalText(unquote(v)); err != nil {
		return valueError(dec, v, timeType, err)
	}
	*dst = tt
	return nil
}

// readTimePtr decodes null (nil) or a time into dst.
func readTimePtr(dec *jsontext.Decoder, dst **time.Time) error {
	if null, err := readNull(dec); null || err != nil {
		*dst = nil
		return err
	}
	if *dst == nil {
		*dst = new(time.Time)
	}
	return readTime(dec, *dst)
}

// readMoney decodes a number into dst with domain.Money's UnmarshalJSON.
func readMoney(dec *jsontext.Decoder, dst *domain.Money) error {
	if dec.PeekKind() != '0' {
		return jsonv2.UnmarshalDecode(dec, dst)
	}
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if err := dst.UnmarshalJSON(v); err != nil {
		return valueError(dec, v, moneyType, err)
	}
	return nil
}
