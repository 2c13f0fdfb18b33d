#!/usr/bin/env bash
# Builds and runs the test suites under sanitizers, each in its own meson setup:
#   build-asan: unit, netns and e2e suites under ASan+UBSan (gcc)
#   build-tsan: the threaded parts' unit tests under TSan (engine, scheduler, session host,
#               API server)
# Usage: scripts/sanitize.sh [--build-only] [asan|tsan]... (default both). JOBS: build
# parallelism (default 2). --build-only: set up and build, run nothing (scripts/test.sh builds
# these in the background, on the CPU the main suites leave idle).
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
[[ "${1:-}" == --build-only ]] && { build_only=1; shift; }
stages=("$@")
((${#stages[@]})) || stages=(asan tsan)
# -O0 -g: the sanitizers see the same bugs, and the tree compiles in about half the time of
# -O2 on the 2-core CI box; a unity build takes a third off that (the headers parsed once for
# four sources); b_lundef=false because the sanitizer runtimes resolve at load time.
common=(-Dtests=enabled -Dbuildtype=debug -Dunity=on -Db_lundef=false)
[[ "${CI:-}" == true || "${CI:-}" == 1 ]] && common+=(-Dwerror=true)

# UCX's memory hooks (libucm: malloc hooks, mmap hooks patched into the code, "bistro")
# replace the allocator ASan and TSan intercept: under sanitizers the process dies in libucm.
# libucs reads these before main(), in every process that links UCX (the daemon and its
# --ucx-session children): off, UCX registers memory without them (slower, still correct).
export UCX_MEM_MALLOC_HOOKS=n UCX_MEM_MALLOC_RELOC=n UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_EVENTS=n
# Any finding fails the test; leaks included (LeakSanitizer runs at exit with ASan).
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/fuzz/tsan.supp"

setup() {  # dir, extra meson options...
  local dir=$1; shift
  [[ -f $dir/build.ninja ]] || meson setup "$dir" "${common[@]}" "$@"
}

rc=0
for stage in "${stages[@]}"; do
  start=$SECONDS
  case $stage in
    asan)
      # gcc leaves float-cast-overflow out of "undefined"; peers' JSON numbers need it.
      setup build-asan -Db_sanitize=address,undefined -Dcpp_args=-fsanitize=float-cast-overflow
      ninja -C build-asan -j"${JOBS:-2}"
      echo "asan build: $((SECONDS - start)) s"; start=$SECONDS
      ((build_only)) && continue
      ROCEWATCH_SANITIZER=asan CI=${CI:-true} meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 2 \
        --suite unit --suite netns --suite e2e --timeout-multiplier 3 || rc=1
      ;;
    tsan)
      setup build-tsan -Db_sanitize=thread
      tests=(core peering api)  # engine+scheduler, session host, API server (one executable per module)
      mapfile -t targets < <(meson introspect build-tsan --tests |
        python3 -c 'import json,sys; w=sys.argv[1:]; [print(t["cmd"][0]) for t in json.load(sys.stdin) if t["name"] in w]' "${tests[@]}")
      ninja -C build-tsan -j"${JOBS:-2}" "${targets[@]/#$PWD\/build-tsan\//}"
      echo "tsan build: $((SECONDS - start)) s"; start=$SECONDS
      ((build_only)) && continue
      meson test -C build-tsan --no-rebuild --print-errorlogs --num-processes 2 --timeout-multiplier 5 \
        "${tests[@]}" || rc=1
      ;;
    *) echo "unknown stage: $stage (asan|tsan)" >&2; exit 2 ;;
  esac
  echo "$stage tests: $((SECONDS - start)) s"
done
exit $rc
