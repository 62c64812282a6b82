#!/usr/bin/env bash
# Fills fuzz/corpus/TARGET/ with seed inputs from the project's tests, the
# shared data and the committed fuzz/seeds/ set. Idempotent; run from any
# directory. Data: $CQLJ_SHARED_DATA, else ../shared/data, else
# /work/shared/data.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
data="${CQLJ_SHARED_DATA:-}"
[ -n "$data" ] || { [ -d "$root/../shared/data" ] && data="$root/../shared/data"; } || true
[ -n "$data" ] || data=/work/shared/data
seeds_doc="$(dirname "$data")/seeds"
corpus="$here/corpus"
mkdir -p "$corpus"/{parse,roundtrip,pgn_import,store_open,pgn_write,jit_vs_interp,json_fen}

n=0
put() { # target, name; content on stdin
    cat > "$corpus/$1/$2"
    n=$((n + 1))
}

# Queries: every `query = "..."` / `text = "..."` of the test data, one per file.
for f in "$root"/tests/conformance/*.toml "$root"/tests/data/syntax/*.toml "$root"/tests/data/interp/*.toml; do
    [ -f "$f" ] || continue
    i=0
    grep -E '^(query|text) = "' "$f" | sed -E 's/^(query|text) = "(.*)"$/\2/; s/\\"/"/g; s/\\\\/\\/g' |
        while IFS= read -r q; do
            i=$((i + 1))
            printf '%s' "$q" > "$corpus/parse/$(basename "$f" .toml)-$i.cql"
            # The same bytes drive the generators of the structured targets.
            printf '%s' "$q" > "$corpus/roundtrip/$(basename "$f" .toml)-$i"
            printf '%s' "$q" > "$corpus/jit_vs_interp/$(basename "$f" .toml)-$i"
        done || true
done
# CQL documentation pages (queries embedded in prose).
if [ -d "$seeds_doc" ]; then
    for f in "$seeds_doc"/*; do
        head -c 4096 "$f" | put parse "doc-$(basename "$f")"
    done
fi

# PGN: the import test files, the edge cases, slices of the studies.
for f in "$root"/tests/data/import/*.pgn "$data"/edge-cases/*.pgn; do
    [ -f "$f" ] || continue
    head -c 16384 "$f" | put pgn_import "$(basename "$f")"
done
# The same texts for the writer, taken raw (first byte's top bit) with
# three comments to insert (positions 0, 2, 5) and none removed.
for f in "$root"/tests/data/import/*.pgn "$data"/edge-cases/*.pgn; do
    [ -f "$f" ] || continue
    { printf '\200\003\000\000\002\003\005\004\000'; head -c 4096 "$f"; } | put pgn_write "$(basename "$f")"
done
if [ -f "$data/studies.pgn" ]; then
    for k in 0 1 2 3 4 5 6 7; do
        tail -c +$((k * 100000 + 1)) "$data/studies.pgn" | head -c 8192 | put pgn_import "studies-$k.pgn"
    done
fi

# Committed seeds (store damage descriptions, minimised finds).
for t in parse roundtrip pgn_import store_open pgn_write jit_vs_interp; do
    [ -d "$here/seeds/$t" ] && cp -f "$here/seeds/$t"/* "$corpus/$t/" 2>/dev/null || true
    # Regression inputs are seeds too.
    [ -d "$root/tests/data/fuzz/$t" ] && find "$root/tests/data/fuzz/$t" -type f ! -name README.md -exec cp -f {} "$corpus/$t/" \; || true
done
echo "seeded: $(for t in parse roundtrip pgn_import store_open pgn_write jit_vs_interp; do printf '%s=%s ' "$t" "$(ls "$corpus/$t" | wc -l)"; done)"
