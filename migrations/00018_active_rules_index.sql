-- +goose Up
-- The rule job and the preview read a user's active rules on every batch;
-- with rules_user_idx they also walked every archived rule of the user, so
-- their cost grew with the user's past saves. This index holds the active
-- rules alone (and serves the count behind the rules-per-user limit).
CREATE INDEX rules_active_user_idx ON rules (user_id, priority, created_at, id) WHERE archived_at IS NULL;

-- +goose Down
DROP INDEX rules_active_user_idx;
