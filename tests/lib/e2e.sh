# Helpers for shell end-to-end tests (sourced). Each test calls t_begin/t_ok/
# t_fail and ends with t_finish, which prints "suite: N passed, N failed".
# Commands are run from the project root; the uraid binary is build/uraid.
URAID=${URAID:-build/uraid}
t_passed=0
t_failed=0
t_suite=${t_suite:-$(basename "$0" .sh)}
t_tmp=$(mktemp -d "/tmp/uraid-${t_suite}.XXXXXX")
trap 'rm -rf "$t_tmp"' EXIT

t_ok() { t_passed=$((t_passed + 1)); echo "ok   $1"; }
t_fail() { t_failed=$((t_failed + 1)); echo "FAIL $1${2:+: $2}"; }

# t_expect NAME CONDITION-COMMAND...: passes if the command succeeds.
t_expect() {
    name=$1; shift
    if "$@" >/dev/null 2>&1; then t_ok "$name"; else t_fail "$name"; fi
}

t_finish() {
    echo "$t_suite: $t_passed passed, $t_failed failed"
    [ "$t_failed" -eq 0 ]
}
