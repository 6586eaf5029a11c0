-- +goose Up
-- Delivery errors stored before this release named addresses, resolvers
-- and whole URLs (docs/webhooks.md, "lastError"); rewrite them to the
-- general terms the worker now stores, keeping a bare HTTP status.
UPDATE webhook_deliveries
SET last_error = CASE
    WHEN last_error ~ '^HTTP [0-9]{3}$' THEN 'HTTP status ' || substr(last_error, 6)
    ELSE 'delivery failed (the detail of this attempt is in the worker''s log)'
END
WHERE last_error IS NOT NULL;

-- +goose Down
-- The rewritten messages are not restored: they leaked what they named.
SELECT 1;
