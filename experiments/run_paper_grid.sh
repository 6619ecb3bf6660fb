#!/bin/bash
# Run the paper preset of Figure 2's panels (default: c, d, b) in the background-friendly way
# docs/figure2.md describes: each panel's store under figures/stores resumes where the last sitting stopped
# (finished units are never redone), figures and summaries go to figures/, and the summed resident
# memory of the run (the command and its worker processes) is sampled every 10 s.
#
#   nohup experiments/run_paper_grid.sh fig2c fig2d fig2b > grid.log 2>&1 &
#
# Stop it with `kill -- -PGID` (or let the session end): the next sitting runs the same line.
set -u
panels=("$@")
[ ${#panels[@]} -eq 0 ] && panels=(fig2c fig2d fig2b)
log_dir=${LOG_DIR:-logs}
mkdir -p "$log_dir"
for p in "${panels[@]}"; do
  echo "$(date -u +%FT%TZ) start $p"
  mixlinreg reproduce "$p" --preset paper --n-jobs 2 --out figures/stores --figures figures \
    --no-progress &
  pid=$!
  peak=0
  while kill -0 $pid 2>/dev/null; do
    pids=$(pstree -p $pid | grep -o '([0-9]\+)' | tr -d '()' | paste -sd, -)
    rss=$(ps -o rss= -p "${pids:-$pid}" | awk '{s+=$1} END {print int(s/1024)}')
    [ "$rss" -gt "$peak" ] && peak=$rss
    echo "$(date -u +%FT%TZ) $p rss_mib=$rss peak_mib=$peak" >> "$log_dir/rss_$p.log"
    sleep 10
  done
  wait $pid
  echo "$(date -u +%FT%TZ) end $p rc=$? peak_rss_mib=$peak"
done
