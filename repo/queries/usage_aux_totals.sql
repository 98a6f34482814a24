-- Auxiliary usage per task over the sessions of a chain (bind: the ids).
SELECT task, COALESCE(SUM(api_call_count), 0) AS api_calls, COALESCE(SUM(input_tokens), 0) AS input_tokens,
	COALESCE(SUM(output_tokens), 0) AS output_tokens, COALESCE(SUM(cache_read_tokens), 0) AS cache_read_tokens,
	COALESCE(SUM(cache_write_tokens), 0) AS cache_write_tokens, COALESCE(SUM(reasoning_tokens), 0) AS reasoning_tokens,
	COALESCE(SUM(estimated_cost_usd), 0) AS estimated_cost_usd
FROM session_model_usage WHERE session_id IN ? AND task <> '' GROUP BY task
