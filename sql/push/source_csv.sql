-- A CSV file as text columns in file order: delimiter and quoting sniffed, a header row, NULL and empty fields as null. $1 = path.
SELECT * FROM read_csv($1, header = true, all_varchar = true, nullstr = ['NULL', ''])
