-- ragsight store, schema 3: a sample may be a turn of a conversation (ragsight.conversation).
-- `conversation_id` and `turn` (the 0-based index of the assistant turn) address a turn the way
-- `sample_id` addresses a sample; a conversation's own sample has its id and a NULL turn. A
-- single-turn sample has both NULL. The sample's data (JSON) keeps its history and tool calls.
ALTER TABLE samples ADD COLUMN conversation_id TEXT;
ALTER TABLE samples ADD COLUMN turn INTEGER;
CREATE INDEX samples_conversation ON samples(run_id, conversation_id, turn);
