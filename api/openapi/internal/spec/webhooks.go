package spec

import (
	"net/http"

	"github.com/finsync/finsync/storage"
)

// tagWebhooks groups the consumer webhook operations.
func tagWebhooks() tag {
	return tag{"Webhooks", "Consumer webhooks, our addition to " + contractV2 + ": signed notifications of syncs, " +
		"transaction changes and connection state, delivered in order with retries; see docs/webhooks.md."}
}

// codeScopedKeyNotAllowed answers a key limited to some accounts on the
// webhook operations.
const codeScopedKeyNotAllowed = "SCOPED_KEY_NOT_ALLOWED"

// webhookErrors are authErrors(extra...) with WebhookForbidden for
// Forbidden.
func webhookErrors(list []string) []string {
	out := make([]string, len(list))
	for i, name := range list {
		if name == "Forbidden" {
			name = "WebhookForbidden"
		}
		out[i] = name
	}
	return out
}

// v2WebhookRoutes are the operations of /webhooks.
func v2WebhookRoutes() []route {
	webhookID := pathParam("webhookId", "The webhook's id.", uuidS())
	deleted := Obj{{"description", "The webhook is deleted, with its deliveries still pending."},
		{"headers", responseHeaders(limited)}}
	return []route{
		{"/webhooks", "post", op{
			id: "createWebhook", summary: "Register a webhook",
			desc: "Registers an https URL to receive the listed events of the caller's data, signed with a " +
				"secret that this answer shows once (stored sealed, never shown again). A URL whose host is a " +
				"literal loopback, private, link-local, multicast or cloud-metadata address answers 400; a host " +
				"name is checked on every delivery, after DNS resolution, and redirects are never followed. " +
				"A user has at most 20 webhooks (400 beyond). With Idempotency-Key, a retry replays this answer, " +
				"secret included; the stored answer is sealed at rest like the secret itself.",
			body:   ref("WebhookCreate"),
			status: http.StatusCreated, respDesc: "The registered webhook, with its secret.",
			schema: wrap("webhook", ref("WebhookCreated")),
			errors: webhookErrors(bodyErrors()),
		}},
		{"/webhooks", "get", op{
			id: "listWebhooks", summary: "List webhooks",
			desc:   "The caller's webhooks, oldest first, without their secrets.",
			status: http.StatusOK, respDesc: "The webhooks.",
			schema: wrap("webhooks", array(ref("Webhook"))),
			errors: webhookErrors(authErrors()),
		}},
		{"/webhooks/{webhookId}", "get", op{
			id: "getWebhook", summary: "One webhook", params: []Obj{webhookID},
			desc: "One of the caller's webhooks, without its secret. Another user's webhook answers 404, " +
				"like a missing one.",
			status: http.StatusOK, respDesc: "The webhook.", schema: wrap("webhook", ref("Webhook")),
			errors: webhookErrors(authErrors("BadRequest", "NotFound")),
		}},
		{"/webhooks/{webhookId}", "delete", op{
			id: "deleteWebhook", summary: "Delete a webhook", params: []Obj{webhookID},
			desc: "Deletes one of the caller's webhooks and its delivery history; events not yet delivered " +
				"are dropped. Another user's webhook answers 404.",
			status: http.StatusNoContent, success: deleted,
			errors: webhookErrors(authErrors("BadRequest", "NotFound")),
		}},
		{"/webhooks/{webhookId}/deliveries", "get", op{
			id: "listWebhookDeliveries", summary: "A webhook's deliveries",
			params: []Obj{webhookID, paramRef("cursor"), paramRef("limit")},
			desc: "The webhook's deliveries, newest first, a page at a time: each event with its status " +
				"(pending, delivered, or failed once given up), attempts and last error. Deliveries finished " +
				"more than 7 days ago are pruned. Another user's webhook answers 404.",
			status: http.StatusOK, respDesc: "A page of deliveries.",
			schema: object(req("deliveries", array(ref("WebhookDelivery"))), req("pageInfo", ref("PageInfo"))),
			errors: webhookErrors(authErrors("BadRequest", "NotFound")),
		}},
	}
}

// v2WebhookSchemas are the schemas of /webhooks.
func v2WebhookSchemas() Obj {
	eventType := describe(enum(storage.WebhookEventTypes()...), "An event type (docs/webhooks.md lists their data).")
	events := describe(array(ref("WebhookEventType")).with("minItems", 1).with("uniqueItems", true),
		"The event types delivered, each at most once.")
	url := describe(strFormat("uri").with("maxLength", 2048),
		"Where events are POSTed: https (plain http only where the operator allows private addresses).")
	view := func(withSecret bool) Obj {
		fields := []field{
			req("id", uuidS()), req("url", url), req("events", events), req("createdAt", dateTime()),
		}
		if withSecret {
			fields = append(fields, req("secret", describe(nonEmpty(),
				"The signing secret (HMAC-SHA256 key of Finsync-Signature), shown only here.")))
		}
		return object(fields...)
	}
	at := func(text string) Obj { return describe(orNull(dateTime()), text) }
	return Obj{
		{"WebhookEventType", eventType},
		{"WebhookCreate", describe(object(req("url", url), req("events", events)),
			"A webhook to register.")},
		{"Webhook", describe(view(false), "A registered webhook.")},
		{"WebhookCreated", describe(view(true), "A webhook just registered, with its secret.")},
		{"WebhookDelivery", describe(object(
			req("eventId", describe(uuidS(), "The event's id, the same in the delivered body (id) and across retries.")),
			req("type", ref("WebhookEventType")),
			req("createdAt", dateTime()),
			req("status", describe(enum(storage.DeliveryPending, storage.DeliveryDelivered, storage.DeliveryFailed),
				"pending: not yet acknowledged (retried while so); delivered: a 2xx answer; failed: given up "+
					"(after 24 hours of retries, or at once when the address is refused).")),
			req("attempts", count()),
			req("lastError", describe(orNull(str()), "Why the last attempt failed; null when none failed.")),
			req("lastAttemptAt", at("When the last attempt was made.")),
			req("nextAttemptAt", at("When a pending delivery is next attempted.")),
			req("deliveredAt", at("When the receiver acknowledged the event.")),
			req("data", describe(anyObject(), "The event's data, as delivered.")),
		), "One event's delivery to the webhook.")},
	}
}
