package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// authSQL finds the user of a key by the key's SHA-256 hash.
const authSQL = `SELECT u.id, u.plan, u.plan_active, u.storage_mode, c.enabled, c.expires_at
	FROM credentials c JOIN users u ON u.id = c.user_id WHERE c.token_hash = $1`

// listSQL is the statement finsync runs for the default listing: the
// user's posted, visible transactions, newest first, one more than the page.
const listSQL = `SELECT t.id, t.user_id, t.bank_connection_id, t.account_id, t.provider, t.provider_id,
	t.status, t.summary, t.amount, t.currency, t.authorized_date, t.posted_date, t.merchant_name,
	t.category_id, COALESCE(t.category_source, 'provider'),
	CASE WHEN t.category_source = 'rule' THEN t.category_rule_id END, t.hidden, t.fees, t.fee_type, t.net_amount,
	t.sub_account, t.payment_channel, t.check_number, t.original_description, t.source, t.type, t.created_at, t.posted_at,
	CASE WHEN t.amount < 0 THEN (SELECT tr.id FROM transfers tr WHERE tr.outflow_transaction_id = t.id AND tr.user_id = $1)
		ELSE (SELECT tr.id FROM transfers tr WHERE tr.inflow_transaction_id = t.id AND tr.user_id = $1) END
	FROM transactions t WHERE t.user_id = $1 AND t.status = $2 AND NOT t.hidden
	ORDER BY t.tx_date DESC, t.id DESC LIMIT $3`

// transaction is one row in pgx's column types, tagged with the version 2
// field names; columns the API does not show are skipped.
type transaction struct {
	ID                  pgtype.UUID        `json:"id"`
	UserID              pgtype.UUID        `json:"-"`
	BankConnectionID    pgtype.UUID        `json:"bankConnectionId"`
	AccountID           pgtype.UUID        `json:"bankAccountId"`
	Provider            pgtype.Text        `json:"provider"`
	ProviderID          pgtype.Text        `json:"providerId"`
	Status              pgtype.Text        `json:"status"`
	Summary             pgtype.Text        `json:"summary"`
	Amount              pgtype.Numeric     `json:"amount"`
	Currency            pgtype.Text        `json:"currency"`
	AuthorizedDate      pgtype.Date        `json:"authorizedDate"`
	PostedDate          pgtype.Date        `json:"postedDate"`
	MerchantName        pgtype.Text        `json:"merchantName"`
	CategoryID          pgtype.UUID        `json:"categoryId"`
	CategorySource      pgtype.Text        `json:"categorySource"`
	CategoryRuleID      pgtype.UUID        `json:"categoryRuleId"`
	Hidden              pgtype.Bool        `json:"-"`
	Fees                pgtype.Numeric     `json:"fees"`
	FeeType             pgtype.Text        `json:"feeType"`
	NetAmount           pgtype.Numeric     `json:"netAmount"`
	SubAccount          pgtype.Text        `json:"subAccount"`
	PaymentChannel      pgtype.Text        `json:"paymentChannel"`
	CheckNumber         pgtype.Text        `json:"checkNumber"`
	OriginalDescription pgtype.Text        `json:"originalDescription"`
	Source              pgtype.Text        `json:"source"`
	Type                pgtype.Text        `json:"-"`
	CreatedAt           pgtype.Timestamptz `json:"-"`
	PostedAt            pgtype.Timestamptz `json:"-"`
	TransferID          pgtype.UUID        `json:"transferId"`
}

func (t *transaction) fields() []any {
	return []any{&t.ID, &t.UserID, &t.BankConnectionID, &t.AccountID, &t.Provider, &t.ProviderID,
		&t.Status, &t.Summary, &t.Amount, &t.Currency, &t.AuthorizedDate, &t.PostedDate, &t.MerchantName,
		&t.CategoryID, &t.CategorySource, &t.CategoryRuleID, &t.Hidden, &t.Fees, &t.FeeType, &t.NetAmount, &t.SubAccount,
		&t.PaymentChannel, &t.CheckNumber, &t.OriginalDescription, &t.Source, &t.Type, &t.CreatedAt, &t.PostedAt, &t.TransferID}
}

type pageInfo struct {
	NextCursor *string `json:"nextCursor"`
	HasMore    bool    `json:"hasMore"`
}

type listBody struct {
	Transactions []transaction `json:"transactions"`
	PageInfo     pageInfo      `json:"pageInfo"`
}

// handler serves GET /v2/transactions.
type handler struct {
	pool *pgxpool.Pool
	// cacheAuth remembers each key's user after its first look-up, so that
	// the baseline measures only the listing (query, scan, encode).
	cacheAuth bool
	users     sync.Map
}

// errUnauthorized is a missing, unknown, disabled or expired key.
var errUnauthorized = errors.New("unauthorized")

// errForbidden is a user without an active paid plan or storage mode.
var errForbidden = errors.New("forbidden")

// ServeHTTP implements http.Handler.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	userID, err := h.user(ctx, r.Header.Get("Authorization"))
	switch {
	case errors.Is(err, errUnauthorized):
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Missing or invalid Authorization header"})
		return
	case errors.Is(err, errForbidden):
		writeError(w, http.StatusForbidden, "SUBSCRIPTION_REQUIRED", "API access requires an active Standard or Pro subscription with Storage Mode")
		return
	case err != nil:
		h.internal(w, err)
		return
	}
	limit, err := parseLimit(r.URL.Query().Get("limit"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "BAD_REQUEST", "limit must be an integer between 1 and 250")
		return
	}
	body, err := h.list(ctx, userID, limit)
	if err != nil {
		h.internal(w, err)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

func (h *handler) internal(w http.ResponseWriter, err error) {
	if errors.Is(err, context.Canceled) { // the client went away
		return
	}
	log.Printf("naive: %v", err)
	writeError(w, http.StatusInternalServerError, "INTERNAL_ERROR", "Internal server error")
}

// user authenticates the header, from the cache when cacheAuth is on.
func (h *handler) user(ctx context.Context, header string) (pgtype.UUID, error) {
	if h.cacheAuth {
		if id, ok := h.users.Load(header); ok {
			return id.(pgtype.UUID), nil
		}
	}
	id, err := h.authenticate(ctx, header)
	if err == nil && h.cacheAuth {
		h.users.Store(header, id)
	}
	return id, err
}

// authenticate returns the user of an "Authorization: Bearer <key>" header.
func (h *handler) authenticate(ctx context.Context, header string) (pgtype.UUID, error) {
	var userID pgtype.UUID
	key, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || key == "" {
		return userID, errUnauthorized
	}
	sum := sha256.Sum256([]byte(key))
	var plan pgtype.Text
	var planActive, storageMode, enabled pgtype.Bool
	var expires pgtype.Timestamptz
	err := h.pool.QueryRow(ctx, authSQL, sum[:]).Scan(&userID, &plan, &planActive, &storageMode, &enabled, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return userID, errUnauthorized
	}
	if err != nil {
		return userID, err
	}
	if !enabled.Bool || expires.Valid && !time.Now().Before(expires.Time) {
		return userID, errUnauthorized
	}
	if plan.String != "standard" && plan.String != "pro" || !planActive.Bool || !storageMode.Bool {
		return userID, errForbidden
	}
	return userID, nil
}

// list loads one page of the user's default listing.
func (h *handler) list(ctx context.Context, userID pgtype.UUID, limit int) (listBody, error) {
	body := listBody{Transactions: make([]transaction, 0, limit+1)}
	rows, err := h.pool.Query(ctx, listSQL, userID, "posted", limit+1)
	if err != nil {
		return body, err
	}
	defer rows.Close()
	for rows.Next() {
		body.Transactions = append(body.Transactions, transaction{})
		if err := rows.Scan(body.Transactions[len(body.Transactions)-1].fields()...); err != nil {
			return body, err
		}
	}
	if err := rows.Err(); err != nil {
		return body, err
	}
	if len(body.Transactions) > limit {
		body.Transactions = body.Transactions[:limit]
		last := body.Transactions[limit-1]
		next := cursor(last)
		body.PageInfo = pageInfo{NextCursor: &next, HasMore: true}
	}
	return body, nil
}

// cursor is a plain (unsealed) position after the row: date and id.
func cursor(t transaction) string {
	return base64.RawURLEncoding.EncodeToString([]byte(t.PostedDate.Time.Format(time.DateOnly) + "," + uuidString(t.ID)))
}

func uuidString(u pgtype.UUID) string {
	b, _ := u.MarshalJSON()
	return strings.Trim(string(b), `"`)
}

// parseLimit reads the page size: 50 when absent, else 1 to 250.
func parseLimit(s string) (int, error) {
	if s == "" {
		return 50, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 250 {
		return 0, errors.New("bad limit")
	}
	return n, nil
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]map[string]string{"error": {"code": code, "message": message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("naive: encode response: %v", err)
	}
}
