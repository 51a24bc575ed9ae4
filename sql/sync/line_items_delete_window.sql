DELETE FROM line_items WHERE usage_date BETWEEN $1::DATE AND $2::DATE AND source = $3
