-- Value kind "category" (ChargeCategory): canonical values and aliases in any case, sent canonical. {categories} = WHEN 'lower' THEN 'Canonical' …
-- parse:
CASE lower(trim({v})) {categories} END
-- problem:
CASE WHEN {v} IS NOT NULL AND {p} IS NULL THEN {name} || ': not a ChargeCategory (Usage, Purchase, Tax, Credit, Adjustment; or Discount, Refund, Fee): ' || left({v}, 40) END
-- json:
'"' || {p} || '"'
