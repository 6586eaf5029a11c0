package ops

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

// statuses are the values of the list's status filter.
func statuses() []string {
	return []string{domain.ConnectionActive, domain.ConnectionError, domain.ConnectionDisabled}
}

// providerName is a well-formed provider name, what the provider filter
// accepts when the console knows no providers (Config.Providers).
var providerName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// listQuery is the list's filters and position, as its URL carries them.
type listQuery struct {
	Provider, Status string
	After            storage.Keyset
}

// parseListQuery validates the list's query parameters: provider (a known
// provider), status (active, error or disabled), after (a cursor of a
// "next" link); an unknown value is an error to answer 400 with.
func (c *Console) parseListQuery(q url.Values) (listQuery, error) {
	var lq listQuery
	if p := q.Get("provider"); p != "" {
		known := slices.Contains(c.cfg.Providers, p) || len(c.cfg.Providers) == 0 && providerName.MatchString(p)
		if !known {
			return lq, fmt.Errorf("provider %q is not one of %s", p, c.providerList())
		}
		lq.Provider = p
	}
	if s := q.Get("status"); s != "" {
		if !slices.Contains(statuses(), s) {
			return lq, fmt.Errorf("status %q is not one of %s", s, strings.Join(statuses(), ", "))
		}
		lq.Status = s
	}
	if a := q.Get("after"); a != "" {
		k, err := parseCursor(a)
		if err != nil {
			return lq, err
		}
		lq.After = k
	}
	return lq, nil
}

// providerList names the providers the filter accepts, for its refusal.
func (c *Console) providerList() string {
	if len(c.cfg.Providers) == 0 {
		return "the providers' names"
	}
	return strings.Join(c.cfg.Providers, ", ")
}

// cursor writes a list position for a "next" link: the creation time in
// microseconds since the epoch (PostgreSQL's precision), "_", the id.
func cursor(k storage.Keyset) string {
	return strconv.FormatInt(k.Date.UnixMicro(), 10) + "_" + k.ID.String()
}

// parseCursor reads a cursor written by cursor.
func parseCursor(s string) (storage.Keyset, error) {
	micros, id, ok := strings.Cut(s, "_")
	us, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil {
		return storage.Keyset{}, fmt.Errorf("after %q is not a position of this list: follow the page's next link", s)
	}
	u, err := uuid.Parse(id)
	if err != nil || u == uuid.Nil {
		return storage.Keyset{}, fmt.Errorf("after %q is not a position of this list: follow the page's next link", s)
	}
	return storage.Keyset{Date: time.UnixMicro(us).UTC(), ID: u}, nil
}

// url is the list's address with these filters, after position k (zero:
// from the start).
func (lq listQuery) url(k storage.Keyset) string {
	v := url.Values{}
	if lq.Provider != "" {
		v.Set("provider", lq.Provider)
	}
	if lq.Status != "" {
		v.Set("status", lq.Status)
	}
	if !k.IsZero() {
		v.Set("after", cursor(k))
	}
	if len(v) == 0 {
		return Prefix
	}
	return Prefix + "?" + v.Encode()
}

// pageData is what the list shows.
type pageData struct {
	Connections []storage.OpsConnection
	CSRF        string
	Notice      string
	JobID       string
	// Query is the filters in force; Providers and Statuses the filters'
	// choices; Next the link to the following page ("" on the last),
	// First the link to the first page when this is a later one.
	Query       listQuery
	Providers   []string
	Statuses    []string
	Next, First string
}

// page lists the connections that pass the filters, maxConnections a page.
func (c *Console) page(ctx *gin.Context) {
	lq, err := c.parseListQuery(ctx.Request.URL.Query())
	if err != nil {
		c.errorPage(ctx, http.StatusBadRequest, err.Error())
		return
	}
	res, err := c.cfg.Store.ListOpsConnections(ctx.Request.Context(), storage.OpsFilter{
		Provider: lq.Provider, Status: lq.Status, After: lq.After, Limit: maxConnections})
	if err != nil {
		c.cfg.Log.ErrorContext(ctx.Request.Context(), "ops page", "error", err)
		ctx.String(http.StatusServiceUnavailable, "The connections cannot be read right now: %v", err)
		return
	}
	d := pageData{Connections: res.Connections, CSRF: c.auth.csrfFor(ctx.GetString(sessionKey)),
		Query: lq, Providers: c.cfg.Providers, Statuses: statuses()}
	if !res.Next.IsZero() {
		d.Next = lq.url(res.Next)
	}
	if !lq.After.IsZero() {
		d.First = lq.url(storage.Keyset{})
	}
	switch ctx.Query("done") {
	case "sync":
		d.Notice, d.JobID = "Sync queued.", ctx.Query("job")
	case "disable":
		d.Notice = "Connection disabled."
	case "enable":
		d.Notice = "Connection enabled; a sync is due now."
	}
	if _, err := strconv.ParseInt(d.JobID, 10, 64); err != nil {
		d.JobID = ""
	}
	c.render(ctx, http.StatusOK, "page.html", d)
}
