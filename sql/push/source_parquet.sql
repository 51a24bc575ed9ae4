-- A Parquet file in file order. $1 = path.
SELECT * FROM read_parquet($1)
