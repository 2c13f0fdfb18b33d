#!/usr/bin/env bash
# Checks that every C++ file git knows or would add (tracked, or untracked and not ignored) is
# formatted as .clang-format says; lists the files that are not. A new file is checked before
# its first commit, not only after it.
# Usage: scripts/check-format.sh            (fix a file with: clang-format -i FILE)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "check-format: clang-format is not installed (scripts/deps.sh test installs it)" >&2
  exit 2
fi
bad=()
while IFS= read -r -d '' f; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files -z --cached --others --exclude-standard -- '*.cpp' '*.hpp' '*.h' '*.cc')
if ((${#bad[@]})); then
  echo "check-format: ${#bad[@]} file(s) differ from .clang-format (clang-format -i FILE fixes one):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: every C++ file matches .clang-format"
