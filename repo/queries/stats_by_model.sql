-- Usage per model from session_model_usage (alias u); {{join}} joins the
-- sessions (alias s) when {{where}}, the stats filter, needs them.
SELECT u.model, COUNT(DISTINCT u.session_id) AS sessions, SUM(u.api_call_count) AS api_calls,
	SUM(u.input_tokens) AS input_tokens, SUM(u.output_tokens) AS output_tokens, SUM(u.cache_read_tokens) AS cache_read_tokens,
	SUM(u.cache_write_tokens) AS cache_write_tokens, SUM(u.reasoning_tokens) AS reasoning_tokens,
	SUM(u.estimated_cost_usd) AS estimated_cost_usd, SUM(u.actual_cost_usd) AS actual_cost_usd
FROM session_model_usage u {{join}}{{where}}
GROUP BY u.model ORDER BY SUM(u.input_tokens + u.output_tokens) DESC, u.model
