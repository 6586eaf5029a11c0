//lint:file-ignore ST1005 the simulator answers with the Sheets API's own error messages, capitals included.

package destsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// a1Range is a parsed A1 range: a sheet and a rectangle of 1-based cells;
// zero end bounds are open.
type a1Range struct {
	sheet      string
	col1, row1 int
	col2, row2 int
	hasCells   bool
}

// parseA1 parses "Sheet", "'My sheet'!A:A", "Sheet!A1:O1" or "Sheet!A5".
func parseA1(s string) (a1Range, error) {
	var r a1Range
	sheet, cells, hasCells := cutSheet(s)
	if sheet == "" {
		return r, fmt.Errorf("Unable to parse range: %s", s)
	}
	r.sheet, r.hasCells = sheet, hasCells
	r.col1, r.row1 = 1, 1
	if !hasCells {
		return r, nil
	}
	from, to, isRange := strings.Cut(cells, ":")
	var ok bool
	if r.col1, r.row1, ok = parseCell(from); !ok {
		return r, fmt.Errorf("Unable to parse range: %s", s)
	}
	if r.row1 == 0 {
		r.row1 = 1
	}
	if !isRange {
		r.col2, r.row2 = r.col1, r.row1
		return r, nil
	}
	if r.col2, r.row2, ok = parseCell(to); !ok {
		return r, fmt.Errorf("Unable to parse range: %s", s)
	}
	return r, nil
}

// cutSheet splits "'It”s'!A1" into the sheet title and the cells.
func cutSheet(s string) (sheet, cells string, hasCells bool) {
	if strings.HasPrefix(s, "'") {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				rest := s[i+1:]
				if rest == "" {
					return b.String(), "", false
				}
				if rest[0] != '!' {
					return "", "", false
				}
				return b.String(), rest[1:], true
			}
			b.WriteByte(s[i])
		}
		return "", "", false
	}
	sheet, cells, hasCells = strings.Cut(s, "!")
	return sheet, cells, hasCells
}

// parseCell parses "AB12" (column 28, row 12), "A" (row 0) or "12".
func parseCell(s string) (col, row int, ok bool) {
	i := 0
	for i < len(s) && s[i] >= 'A' && s[i] <= 'Z' {
		col = col*26 + int(s[i]-'A'+1)
		i++
	}
	if i < len(s) {
		n, err := strconv.Atoi(s[i:])
		if err != nil || n < 1 {
			return 0, 0, false
		}
		row = n
	}
	return col, row, i > 0 || row > 0
}

// sheetKey names a sheet of a spreadsheet; sheets are created on first use.
func sheetKey(r *http.Request, sheet string) string { return r.PathValue("id") + "/" + sheet }

// handleSheetsGet serves spreadsheets.values.get.
func (s *Server) handleSheetsGet(w http.ResponseWriter, r *http.Request, _ []byte) int {
	rg, err := parseA1(r.PathValue("range"))
	if err != nil {
		return googleFail(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error())
	}
	s.mu.Lock()
	rows := s.sheets[sheetKey(r, rg.sheet)]
	var out [][]json.RawMessage
	for i := rg.row1; i <= len(rows) && (rg.row2 == 0 || i <= rg.row2); i++ {
		out = append(out, sliceCols(rows[i-1], rg.col1, rg.col2))
	}
	s.mu.Unlock()
	for len(out) > 0 && len(out[len(out)-1]) == 0 {
		out = out[:len(out)-1]
	}
	body := map[string]any{"range": r.PathValue("range"), "majorDimension": "ROWS"}
	if len(out) > 0 {
		body["values"] = out
	}
	writeJSON(w, http.StatusOK, body)
	return http.StatusOK
}

// sliceCols returns the cells of row from column c1 to c2 (0: to the end),
// without trailing empty cells.
func sliceCols(row []json.RawMessage, c1, c2 int) []json.RawMessage {
	var out []json.RawMessage
	for c := c1; c <= len(row) && (c2 == 0 || c <= c2); c++ {
		out = append(out, row[c-1])
	}
	for len(out) > 0 && isEmptyCell(out[len(out)-1]) {
		out = out[:len(out)-1]
	}
	return out
}

func isEmptyCell(v json.RawMessage) bool {
	s := strings.TrimSpace(string(v))
	return s == "" || s == `""` || s == "null"
}

// valueRangeBody is the body of values.update and values.append.
type valueRangeBody struct {
	Range          string              `json:"range"`
	MajorDimension string              `json:"majorDimension"`
	Values         [][]json.RawMessage `json:"values"`
}

// readValueRange checks the valueInputOption and decodes the body.
func readValueRange(r *http.Request, body []byte) (valueRangeBody, error) {
	var v valueRangeBody
	switch r.URL.Query().Get("valueInputOption") {
	case "RAW", "USER_ENTERED":
	default:
		return v, fmt.Errorf("Invalid valueInputOption: INPUT_VALUE_OPTION_UNSPECIFIED")
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return v, fmt.Errorf("Invalid JSON payload received. %v", err)
	}
	if v.MajorDimension != "" && v.MajorDimension != "ROWS" {
		return v, fmt.Errorf("only ROWS is simulated")
	}
	return v, nil
}

// handleSheetsUpdate serves spreadsheets.values.update.
func (s *Server) handleSheetsUpdate(w http.ResponseWriter, r *http.Request, body []byte) int {
	a1 := r.PathValue("range")
	rg, err := parseA1(a1)
	if err != nil {
		return googleFail(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error())
	}
	v, err := readValueRange(r, body)
	if err != nil {
		return googleFail(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error())
	}
	s.mu.Lock()
	cells := s.writeCells(sheetKey(r, rg.sheet), rg.row1, rg.col1, v.Values)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"spreadsheetId": r.PathValue("id"), "updatedRange": a1,
		"updatedRows": len(v.Values), "updatedColumns": maxLen(v.Values), "updatedCells": cells,
	})
	return http.StatusOK
}

// handleSheetsAppend serves spreadsheets.values.append ({range}:append):
// the rows go after the last non-empty row of the sheet.
func (s *Server) handleSheetsAppend(w http.ResponseWriter, r *http.Request, body []byte) int {
	a1, ok := strings.CutSuffix(r.PathValue("range"), ":append")
	if !ok {
		return googleFail(w, http.StatusNotFound, "NOT_FOUND", "Requested entity was not found.")
	}
	rg, err := parseA1(a1)
	if err != nil {
		return googleFail(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error())
	}
	v, err := readValueRange(r, body)
	if err != nil {
		return googleFail(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error())
	}
	key := sheetKey(r, rg.sheet)
	s.mu.Lock()
	last := 0
	for i, row := range s.sheets[key] {
		if len(sliceCols(row, 1, 0)) > 0 {
			last = i + 1
		}
	}
	cells := s.writeCells(key, last+1, rg.col1, v.Values)
	s.mu.Unlock()
	updated := fmt.Sprintf("%s!A%d", rg.sheet, last+1)
	writeJSON(w, http.StatusOK, map[string]any{
		"spreadsheetId": r.PathValue("id"),
		"tableRange":    fmt.Sprintf("%s!A1:A%d", rg.sheet, max(last, 1)),
		"updates": map[string]any{
			"spreadsheetId": r.PathValue("id"), "updatedRange": updated,
			"updatedRows": len(v.Values), "updatedColumns": maxLen(v.Values), "updatedCells": cells,
		},
	})
	return http.StatusOK
}

// writeCells writes values into the sheet from (row, col), growing it as
// needed, and returns the number of cells written. The caller holds
// s.mu.
func (s *Server) writeCells(key string, row, col int, values [][]json.RawMessage) int {
	rows := s.sheets[key]
	n := 0
	for i, vals := range values {
		ri := row - 1 + i
		for len(rows) <= ri {
			rows = append(rows, nil)
		}
		for j, v := range vals {
			ci := col - 1 + j
			for len(rows[ri]) <= ci {
				rows[ri] = append(rows[ri], json.RawMessage(`""`))
			}
			rows[ri][ci] = v
			n++
		}
	}
	s.sheets[key] = rows
	return n
}

func maxLen(rows [][]json.RawMessage) int {
	n := 0
	for _, r := range rows {
		n = max(n, len(r))
	}
	return n
}
