-- +goose Up
-- A transaction marked deleted leaves its transfer (00023). That trigger
-- ran per deleted row, two DELETE statements each, and each of those fired
-- the transfers table's statement trigger that notes a listing change
-- (00035): a sync that replaced 35 pending rows ran 70 statements and 70
-- triggers inside one UPDATE. Now one statement trigger per UPDATE of
-- transactions deletes the transfers of every row the statement marked
-- deleted (deleted now, not before: as 00023's WHEN), with one DELETE (a probe of each side's unique key per
-- deleted row: an OR of the two let the planner scan the user's transfers
-- for every row), and none when the statement deleted no row. Rejections
-- stay, as before.
-- +goose StatementBegin
CREATE FUNCTION drop_deleted_transactions_transfers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM changed_rows WHERE status = 'deleted') THEN
        DELETE FROM transfers t WHERE t.id IN (
            SELECT z.id FROM changed_rows n JOIN old_rows p ON p.id = n.id CROSS JOIN LATERAL (
                SELECT o.id FROM transfers o WHERE o.outflow_transaction_id = n.id AND o.user_id = n.user_id
                UNION ALL
                SELECT i.id FROM transfers i WHERE i.inflow_transaction_id = n.id AND i.user_id = n.user_id) z
            WHERE n.status = 'deleted' AND p.status <> 'deleted');
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP TRIGGER transactions_deleted_drop_transfers ON transactions;
DROP FUNCTION drop_deleted_transaction_transfers();
CREATE TRIGGER transactions_deleted_drop_transfers AFTER UPDATE ON transactions
    REFERENCING NEW TABLE AS changed_rows OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION drop_deleted_transactions_transfers();

-- +goose Down
DROP TRIGGER transactions_deleted_drop_transfers ON transactions;
DROP FUNCTION drop_deleted_transactions_transfers();
-- +goose StatementBegin
CREATE FUNCTION drop_deleted_transaction_transfers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM transfers WHERE outflow_transaction_id = NEW.id AND user_id = NEW.user_id;
    DELETE FROM transfers WHERE inflow_transaction_id = NEW.id AND user_id = NEW.user_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER transactions_deleted_drop_transfers AFTER UPDATE OF status ON transactions
    FOR EACH ROW WHEN (NEW.status = 'deleted' AND OLD.status <> 'deleted')
    EXECUTE FUNCTION drop_deleted_transaction_transfers();
