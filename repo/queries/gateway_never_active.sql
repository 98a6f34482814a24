-- Keyed, open sessions with no sign of a turn, started before the cutoff
-- (bind).
SELECT s.id, s.session_key, s.source, s.chat_id, s.chat_type, s.user_id, s.started_at FROM sessions s
WHERE s.session_key IS NOT NULL AND s.ended_at IS NULL AND s.title IS NULL AND s.last_activity_at IS NULL
	AND COALESCE(s.message_count, 0) = 0 AND COALESCE(s.tool_call_count, 0) = 0 AND COALESCE(s.api_call_count, 0) = 0
	AND COALESCE(s.input_tokens, 0) = 0 AND COALESCE(s.output_tokens, 0) = 0
	AND COALESCE(s.pinned, 0) = 0 AND COALESCE(s.archived, 0) = 0
	AND s.started_at IS NOT NULL AND s.started_at < ?
	AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)
ORDER BY s.started_at
