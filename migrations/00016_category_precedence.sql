-- +goose Up
-- The precedence of a transaction's category sources, in one place: a
-- category the user chose outranks one a rule set, which outranks the
-- provider's (a NULL category_source is the provider's: a row without a
-- category). category_kept(current, writer) is true when a writer of
-- source writer must leave a category of source current alone: the sync
-- writes as 'provider', the rule job as 'rule', the user as 'user' (and a
-- writer may always replace its own source, as the rule job does when it
-- undoes an archived rule's decision). Both are plain SQL expressions, so
-- PostgreSQL inlines them into the statements that call them. The Go
-- mirror is domain.CategoryKept; a test checks that the two agree.
CREATE FUNCTION category_source_rank(source text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE source WHEN 'user' THEN 3 WHEN 'rule' THEN 2 ELSE 1 END;

CREATE FUNCTION category_kept(current_source text, writer text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN category_source_rank(current_source) > category_source_rank(writer);

-- +goose Down
DROP FUNCTION category_kept(text, text);
DROP FUNCTION category_source_rank(text);
