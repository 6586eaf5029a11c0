package mercurysim

import (
	"bytes"
	"net/http"
	"sync"
)

// pageMemo keeps rendered account transaction pages (sim.Options.MemoBytes)
// so that a page asked again is a write of bytes. A page is a pure
// function of the organisation (its token), the account, the query and
// the simulated day, with the connection's settings frozen by its first
// page. Every change of the simulator's clock or faults forgets all pages
// (Route has reset called on each), and a page rendered across such a
// change is not kept. It is safe for concurrent use; kept bodies are
// never modified.
type pageMemo struct {
	limit int64 // bytes kept at most; <= 0 keeps nothing

	mu sync.Mutex
	// gen counts the changes forgotten (reset), so that a page rendered
	// across one is not kept.
	gen   uint64
	size  int64
	pages map[pageKey][]byte
}

// pageKey is everything an account transaction page depends on.
type pageKey struct {
	token string
	slot  int
	query string // the raw query, as the client sent it
	clock int64
}

// reset forgets every page.
func (m *pageMemo) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	m.size, m.pages = 0, nil
}

// generation returns the number of changes so far, to pass to keep for a
// page rendered from a snapshot taken after this call.
func (m *pageMemo) generation() uint64 {
	if m.limit <= 0 {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gen
}

// lookup returns the body kept for k (nil when none) and whether there is
// room to keep another page.
func (m *pageMemo) lookup(k pageKey) (body []byte, room bool) {
	if m.limit <= 0 {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pages[k], m.size < m.limit
}

// keep stores body as the page of k, rendered in generation gen, unless a
// change came since or the memo is full (pages are then rendered afresh,
// rather than evicting others: a sync walks its pages in order, which
// would evict each page before it is asked again).
func (m *pageMemo) keep(k pageKey, gen uint64, body []byte) {
	n := int64(len(body) + len(k.token) + len(k.query))
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen != m.gen || m.size+n > m.limit {
		return
	}
	if _, ok := m.pages[k]; ok {
		return
	}
	if m.pages == nil {
		m.pages = map[pageKey][]byte{}
	}
	m.pages[k] = bytes.Clone(body)
	m.size += n
}

// teeWriter passes a response on and keeps a copy of its body.
type teeWriter struct {
	http.ResponseWriter
	body []byte
}

// Write writes b to the response and appends it to the copy.
func (t *teeWriter) Write(b []byte) (int, error) {
	t.body = append(t.body, b...)
	return t.ResponseWriter.Write(b)
}
