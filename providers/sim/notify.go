package sim

import (
	"bytes"
	"context"
	"net/http"
	"time"
)

// notifyAttempts and notifyBackoff bound how a notification is retried
// when its receiver does not answer 200 (real providers retry longer).
const (
	notifyAttempts = 3
	notifyBackoff  = time.Second
	notifyTimeout  = 10 * time.Second
)

// Notify posts body, a provider's notification, to the provider's webhook
// URL (SetWebhookURL) in the background, with the headers sign returns
// for it at the simulator's Now (the provider's signature). It does
// nothing when no URL is set. A receiver that does not answer 200 gets it
// again, up to three times a second apart.
func (s *Simulator) Notify(provider string, body []byte, sign func(body []byte, now time.Time) http.Header) {
	url := s.WebhookURL(provider)
	if url == "" {
		return
	}
	go func() {
		for attempt := range notifyAttempts {
			if attempt > 0 {
				time.Sleep(notifyBackoff)
			}
			if s.post(url, body, sign(body, s.Now())) {
				return
			}
		}
	}()
}

// post delivers one notification; it reports a 200 answer.
func (s *Simulator) post(url string, body []byte, header http.Header) bool {
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.notifyClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
