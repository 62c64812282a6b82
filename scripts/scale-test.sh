#!/usr/bin/env bash
# Scale test (not run in CI): builds a store of ~114 M positions (the book
# imported once, then appended to nine times with `cqlj index --append`),
# records each append's time and the store's unused bytes, runs
# `cqlj bench` on it, and records throughput, peak resident memory and the
# 1->2 thread speed-up, plus the machine's baselines (two independent
# CPU-bound processes; sequential read bandwidth of the store file through
# the page cache).
#
# Usage: scripts/scale-test.sh [WORKDIR]   (default /tmp/cqlj-scale; needs
# ~10 GB free there). Results go to WORKDIR/*.txt; copy the figures into
# BENCHMARKS.md. Environment: SCALE_PGN (input, default the book),
# SCALE_APPENDS (default 9), SCALE_INDEX_ONLY=1 (stop after building the
# store and `cqlj info`: a quick check of the build steps).
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${1:-/tmp/cqlj-scale}
DATA=${CQLJ_SHARED_DATA:-$(pwd)/../shared/data}
[ -d "$DATA" ] || DATA=/work/shared/data
BOOK=$DATA/book.pgn.zst
mkdir -p "$WORK"
df -h "$WORK"
cargo build --release
CQLJ=target/release/cqlj
STORE=$WORK/book10.cqlj
T=/usr/bin/time

APPENDS=${SCALE_APPENDS:-9}
INPUT=${SCALE_PGN:-$BOOK}

if [ ! -f "$STORE" ]; then
  # Built under another name, renamed when complete: an interrupted build
  # is started again, never taken for the full store.
  PART=$STORE.partial
  rm -f "$PART"
  echo "== index: $INPUT once, then appended $APPENDS times ($STORE)"
  $T -v "$CQLJ" index --quiet --threads 2 -o "$PART" "$INPUT" \
    2> "$WORK/index-time.txt" | tee "$WORK/index.txt"
  grep -E "Elapsed|Maximum resident" "$WORK/index-time.txt"
  : > "$WORK/append.txt"
  for k in $(seq 1 "$APPENDS"); do
    echo "-- append $k" | tee -a "$WORK/append.txt"
    $T -v "$CQLJ" index --quiet --append --threads 2 -o "$PART" "$INPUT" \
      2> "$WORK/append-time.txt" | tee -a "$WORK/append.txt"
    grep -E "Elapsed|Maximum resident" "$WORK/append-time.txt" | tee -a "$WORK/append.txt"
  done
  mv "$PART" "$STORE"
fi
"$CQLJ" info "$STORE" | tee "$WORK/info.txt"
[ "${SCALE_INDEX_ONLY:-0}" = 1 ] && exit 0

echo "== sequential read bandwidth of the store file (page cache, 1 MiB reads)"
dd if="$STORE" of=/dev/null bs=1M 2>&1 | tail -1 | tee "$WORK/read-cold-or-warm.txt"
dd if="$STORE" of=/dev/null bs=1M 2>&1 | tail -1 | tee "$WORK/read-again.txt"

echo "== two independent CPU-bound processes vs one (same single-threaded scan)"
Q='shift flip {Ka1 ka3}'
one() { "$CQLJ" bench "$STORE" --no-suite --cql "$Q" --engines jit --threads 1 >/dev/null; }
s=$(date +%s.%N); one; e=$(date +%s.%N); t1=$(echo "$e - $s" | bc)
s=$(date +%s.%N); one & one & wait; e=$(date +%s.%N); t2=$(echo "$e - $s" | bc)
echo "one process: $t1 s; two at once: $t2 s; throughput ratio 2*$t1/$t2 = $(echo "2*$t1/$t2" | bc -l)" | tee "$WORK/cpu-baseline.txt"

echo "== bench on the scale store (JIT on all positions; interpreter on 10,000 games)"
$T -v "$CQLJ" bench "$STORE" --threads 2 2> "$WORK/bench-time.txt" | tee "$WORK/bench.txt"
grep -E "Elapsed|Maximum resident" "$WORK/bench-time.txt" | tee -a "$WORK/bench.txt"

echo "== a plain query run over the whole scale store: peak RSS"
$T -v "$CQLJ" -cql 'Ra1' -i "$STORE" -o - --quiet > /dev/null 2> "$WORK/run-time.txt" || true
grep -E "Elapsed|Maximum resident" "$WORK/run-time.txt" | tee "$WORK/run.txt"

echo "== anonymous vs file-backed resident memory of a run (sampled every 0.2 s)"
"$CQLJ" -cql "$Q" -i "$STORE" -o "$WORK/out.pgn" --quiet & P=$!
maxa=0; maxf=0
while kill -0 $P 2>/dev/null; do
  a=$(awk '/RssAnon/{print $2}' /proc/$P/status 2>/dev/null || echo 0)
  f=$(awk '/RssFile/{print $2}' /proc/$P/status 2>/dev/null || echo 0)
  [ -n "$a" ] && [ "$a" -gt "$maxa" ] && maxa=$a
  [ -n "$f" ] && [ "$f" -gt "$maxf" ] && maxf=$f
  sleep 0.2
done
echo "peak RssAnon ${maxa} kB, peak RssFile (mapped page cache) ${maxf} kB" | tee "$WORK/rss.txt"
