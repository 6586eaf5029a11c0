package destinations

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ValueRange is the Sheets API v4 ValueRange: cells of an A1 range, by rows.
type ValueRange struct {
	Range          string              `json:"range,omitempty"`
	MajorDimension string              `json:"majorDimension,omitempty"`
	Values         [][]json.RawMessage `json:"values,omitempty"`
}

// writeSheetRow writes the account's row: it reads column A to find the
// row holding the account id, then updates that row in place
// (values.update) or appends a new one (values.append); an empty sheet
// first gets the header row. Replaying an event finds the row it wrote and
// rewrites it, so an event acknowledged twice never duplicates a row.
func writeSheetRow(ctx context.Context, client *http.Client, c SheetsConfig, token string, ev Event) error {
	vals, err := rowValues(ev)
	if err != nil {
		return permanent(KindGoogleSheets, "BAD_EVENT", err.Error())
	}
	id, err := accountID(ev)
	if err != nil {
		return permanent(KindGoogleSheets, "BAD_EVENT", err.Error())
	}
	s := sheetsClient{client: client, c: c, token: token}
	keys, err := s.get(ctx, quoteSheet(c.Sheet)+"!A:A")
	if err != nil {
		return err
	}
	if len(keys.Values) == 0 {
		if err := s.update(ctx, 1, headerRow()); err != nil {
			return err
		}
	}
	row := sheetCells(vals)
	for i, r := range keys.Values {
		if len(r) > 0 && cellText(r[0]) == id {
			return s.update(ctx, i+1, row)
		}
	}
	return s.append(ctx, row)
}

// sheetCells turns the row's JSON values into cells: null becomes an
// empty string (which clears the cell, where null would leave it as is).
func sheetCells(vals []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, len(vals))
	for i, v := range vals {
		if isNull(v) {
			v = json.RawMessage(`""`)
		}
		out[i] = v
	}
	return out
}

func headerRow() []json.RawMessage {
	hs := Headers()
	out := make([]json.RawMessage, len(hs))
	for i, h := range hs {
		b, _ := json.Marshal(h)
		out[i] = b
	}
	return out
}

// cellText is a cell's value as text.
func cellText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(v))
}

// quoteSheet quotes a sheet title for an A1 range, doubling its quotes.
func quoteSheet(title string) string {
	return "'" + strings.ReplaceAll(title, "'", "''") + "'"
}

// ColumnLetter returns the A1 letters of the n-th column (1 is A, 27 AA).
func ColumnLetter(n int) string {
	var b []byte
	for n > 0 {
		n--
		b = append([]byte{byte('A' + n%26)}, b...)
		n /= 26
	}
	return string(b)
}

// sheetsClient calls the values endpoints of one spreadsheet.
type sheetsClient struct {
	client *http.Client
	c      SheetsConfig
	token  string
}

func (s sheetsClient) url(a1, suffix string, q url.Values) string {
	u := trimRoot(s.c.BaseURL) + "/v4/spreadsheets/" + url.PathEscape(s.c.SpreadsheetID) + "/values/" + url.PathEscape(a1) + suffix
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

func (s sheetsClient) header() http.Header {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+s.token)
	return h
}

// get is spreadsheets.values.get.
func (s sheetsClient) get(ctx context.Context, a1 string) (ValueRange, error) {
	var out ValueRange
	q := url.Values{"majorDimension": {"ROWS"}, "valueRenderOption": {"UNFORMATTED_VALUE"}}
	err := do(ctx, s.client, request{service: KindGoogleSheets, method: http.MethodGet, url: s.url(a1, "", q), header: s.header()}, &out, sheetsError)
	return out, err
}

// rowRange is the A1 range of one whole row of the account columns.
func (s sheetsClient) rowRange(row int) string {
	return fmt.Sprintf("%s!A%d:%s%d", quoteSheet(s.c.Sheet), row, ColumnLetter(len(columns)), row)
}

// update is spreadsheets.values.update of one row, written as given (RAW).
func (s sheetsClient) update(ctx context.Context, row int, cells []json.RawMessage) error {
	a1 := s.rowRange(row)
	body, err := json.Marshal(ValueRange{Range: a1, MajorDimension: "ROWS", Values: [][]json.RawMessage{cells}})
	if err != nil {
		return permanent(KindGoogleSheets, "BAD_EVENT", err.Error())
	}
	q := url.Values{"valueInputOption": {"RAW"}}
	var out struct {
		UpdatedRows int `json:"updatedRows"`
	}
	return do(ctx, s.client, request{service: KindGoogleSheets, method: http.MethodPut, url: s.url(a1, "", q), header: s.header(), body: body}, &out, sheetsError)
}

// append is spreadsheets.values.append of one row after the sheet's table.
func (s sheetsClient) append(ctx context.Context, cells []json.RawMessage) error {
	a1 := quoteSheet(s.c.Sheet) + "!A1"
	body, err := json.Marshal(ValueRange{Range: a1, MajorDimension: "ROWS", Values: [][]json.RawMessage{cells}})
	if err != nil {
		return permanent(KindGoogleSheets, "BAD_EVENT", err.Error())
	}
	q := url.Values{"valueInputOption": {"RAW"}, "insertDataOption": {"INSERT_ROWS"}}
	var out struct {
		Updates struct {
			UpdatedRange string `json:"updatedRange"`
		} `json:"updates"`
	}
	return do(ctx, s.client, request{service: KindGoogleSheets, method: http.MethodPost, url: s.url(a1, ":append", q), header: s.header(), body: body}, &out, sheetsError)
}

// sheetsError reads Google's error body {"error": {"code", "message",
// "status"}}.
func sheetsError(body []byte) (string, string) {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", ""
	}
	return e.Error.Status, e.Error.Message
}
