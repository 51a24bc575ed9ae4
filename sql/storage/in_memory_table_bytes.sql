-- Bytes of committed table rows DuckDB holds in memory until a checkpoint writes them to the file
-- (commits smaller than a row group).
SELECT coalesce(sum(memory_usage_bytes), 0)::BIGINT AS bytes FROM duckdb_memory() WHERE tag = 'IN_MEMORY_TABLE'
