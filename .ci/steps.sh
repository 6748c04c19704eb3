# Step bookkeeping for .ci/run (sourced, bash). Each step's start, end and status go to
# $CI_OUT/steps.tsv; at exit, also on failure or a signal, scripts/ci-table.ts prints the timing table
# (each step's wall time, the slowest test files). Steps run in the foreground (`ci_step`) or alongside
# others (`ci_spawn` ... `ci_wait`): a parallel step's lines are prefixed with its name and kept in
# $CI_OUT/logs/NAME.log, whose tail is shown again when it fails, so its error is not lost in the others'.
# SCIFI_CI_OUT names the folder (default: a new one under /tmp).

CI_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CI_OUT="${SCIFI_CI_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/scifi-ci.XXXXXX")}"
mkdir -p "$CI_OUT/logs"
: >"$CI_OUT/steps.tsv"
: >"$CI_OUT/test-files.jsonl"
CI_T0=$(date +%s)
CI_FG=""
CI_FG_START=0
declare -A CI_PIDS=()
declare -A CI_BG_START=()

ci_record() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$CI_OUT/steps.tsv"; }
ci_log() { printf '%s/logs/%s.log' "$CI_OUT" "${1//[^A-Za-z0-9_.-]/_}"; }

# Ends the current foreground step; reaching here means it succeeded (set -e stops on a failure).
ci_step_end() {
  [ -n "$CI_FG" ] && ci_record "$CI_FG" "$CI_FG_START" "$(date +%s)" ok fg
  CI_FG=""
}

# Starts foreground step NAME (ending the one before).
ci_step() {
  ci_step_end
  CI_FG="$1"
  CI_FG_START=$(date +%s)
  printf '\n==> %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"
}

# Runs `CMD...` (a command or a function of .ci/run) as step NAME alongside the others.
ci_spawn() {
  local name="$1"
  shift
  local log
  log="$(ci_log "$name")"
  printf '\n==> %s (%s, in parallel: its lines start with [%s])\n' "$name" "$(date -u +%H:%M:%S)" "$name"
  CI_BG_START[$name]=$(date +%s)
  (
    start=$(date +%s)
    set +e
    (set -e; "$@") </dev/null 2>&1 | tee "$log" | sed -u "s/^/[$name] /"
    rc=${PIPESTATUS[0]}
    status=ok
    [ "$rc" -eq 0 ] || status="failed (exit $rc)"
    ci_record "$name" "$start" "$(date +%s)" "$status" bg
    exit "$rc"
  ) &
  CI_PIDS[$name]=$!
}

# Waits for parallel steps NAME...; when one failed, shows the tail of its log and stops CI.
ci_wait() {
  local name rc failed=()
  for name in "$@"; do
    [ -n "${CI_PIDS[$name]:-}" ] || { echo "ci_wait: no parallel step named '$name'" >&2; exit 2; }
    rc=0
    wait "${CI_PIDS[$name]}" || rc=$?
    unset "CI_PIDS[$name]"
    [ "$rc" -eq 0 ] || failed+=("$name")
  done
  [ "${#failed[@]}" -eq 0 ] && return 0
  for name in "${failed[@]}"; do
    printf '\n==> %s FAILED; the last 40 lines of %s:\n' "$name" "$(ci_log "$name")" >&2
    tail -n 40 "$(ci_log "$name")" >&2
  done
  exit 1
}

# Ends PID and the processes it started, children first (a stopped CI leaves no build running).
ci_kill_tree() {
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do ci_kill_tree "$child"; done
  kill -TERM "$1" 2>/dev/null || true
}

ci_table() {
  local now="$1"
  if ! node "$CI_ROOT/scripts/ci-table.ts" "$CI_OUT/steps.tsv" "$CI_OUT/test-files.jsonl" "$now" 2>/dev/null; then
    echo "==> CI timing (raw: name, start, end, status, mode; epoch seconds, end 0 = still running)"
    cat "$CI_OUT/steps.tsv"
  fi
}

ci_finish() {
  local rc=$? now name
  set +e
  now=$(date +%s)
  if [ -n "$CI_FG" ]; then
    if [ "$rc" -eq 0 ]; then ci_record "$CI_FG" "$CI_FG_START" "$now" ok fg
    else ci_record "$CI_FG" "$CI_FG_START" "$now" "failed (exit $rc)" fg; fi
  fi
  for name in "${!CI_PIDS[@]}"; do
    ci_kill_tree "${CI_PIDS[$name]}"
    ci_record "$name" "${CI_BG_START[$name]}" "$now" "stopped (CI ended first)" bg
  done
  printf '\n'
  ci_table "$now"
  printf '\nCI %s after %s s; step logs and times in %s\n' \
    "$([ "$rc" -eq 0 ] && echo passed || echo "FAILED (exit $rc)")" "$((now - CI_T0))" "$CI_OUT"
  exit "$rc"
}

trap ci_finish EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
