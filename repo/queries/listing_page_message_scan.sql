-- The page CTEs of a listing by last activity from the newest {{scan}}
-- message timestamps and the newest {{session_scan}} session stamps (a CTE
-- list for WITH RECURSIVE, ending in page(id, eff, started_at); see
-- messageScanPage): rm and rs hold them, bound the bound T ({{bound}}, the
-- newer of the two scans' last values), up and cand add every compression
-- ancestor (over {{edge}}, at most {{max_depth}} steps), {{chain}} walks
-- each candidate's chain forward, pall is every admitted candidate
-- ({{where}}) with the activity {{last_active}} of its chain, page the
-- page ({{limit}}). {{recent}} keeps the message scan to real timestamps.
rm AS (SELECT session_id AS id, timestamp AS ts FROM messages WHERE timestamp {{recent}} ORDER BY timestamp DESC LIMIT {{scan}}),
rs AS (SELECT id, COALESCE(last_activity_at, started_at) AS ts FROM sessions ORDER BY COALESCE(last_activity_at, started_at) DESC, started_at DESC LIMIT {{session_scan}}),
bound AS (SELECT {{bound}} AS t),
seen(id) AS (SELECT id FROM rm UNION SELECT id FROM rs WHERE ts > (SELECT t FROM bound)),
up(id, depth) AS (
	SELECT id, 0 FROM seen
	UNION
	SELECT p.id, up.depth + 1 FROM up JOIN sessions c ON c.id = up.id JOIN sessions p ON {{edge}} WHERE up.depth < {{max_depth}}
),
cand(id) AS (SELECT DISTINCT id FROM up),
{{chain}},
pall AS (
	SELECT s.id, MAX({{last_active}}) AS eff, s.started_at FROM cand JOIN sessions s ON s.id = cand.id
	LEFT JOIN chain c ON c.root_id = s.id
	LEFT JOIN sessions cs ON cs.id = c.cur_id
	{{where}}
	GROUP BY s.id, s.started_at
),
page AS (SELECT id, eff, started_at FROM pall ORDER BY eff DESC, started_at DESC, id DESC{{limit}})
