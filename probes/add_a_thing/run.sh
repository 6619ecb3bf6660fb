#!/usr/bin/env bash
# The three add-a-thing trials of issue 36, in a throwaway worktree of main's HEAD, from
# docs/development.md alone. Prints what each trial edited and whether it worked.
set -uo pipefail
# Run from a checkout with its virtual environment active: bash probes/add_a_thing/run.sh
# (all three trials), or name the ones to run: bash probes/add_a_thing/run.sh loss
ONLY=" ${*:-study method loss} "
T=$(cd "$(dirname "$0")" && pwd)
MAIN=$(git -C "$T" rev-parse --show-toplevel)
TMP=$(mktemp -d)
W=$TMP/wt
git -C "$MAIN" worktree add -q --detach "$W" HEAD
cd "$W"
export PYTHONPATH="$W"   # this worktree's package, not the editable install's
# kernels already compiled for these sources: numba's stamp is the source bytes plus our digest
mkdir -p mixlinreg/__pycache__ && cp "$MAIN"/mixlinreg/__pycache__/*.nb[ic] mixlinreg/__pycache__/ 2>/dev/null
echo "== package from: $(python -c 'import mixlinreg; print(mixlinreg.__file__)')"

if [[ $ONLY == *" study "* ]]; then
echo "== trial 1: a study (its module, its words, its config; then the one step)"
cp $T/x1.py mixlinreg/theory/studies/x1.py
cp $T/x1.md mixlinreg/theory/studies/x1.md
cp $T/X1.toml mixlinreg/configs/studies/X1.toml
python -m mixlinreg.cli check X1 --preset paper --out figures/checks --store $TMP/store 2>&1 | tail -3
python -m mixlinreg.cli regenerate --check; echo "regenerate --check before: exit $?"
python -m mixlinreg.cli regenerate 2>&1 | tail -3
python -m mixlinreg.cli regenerate --check; echo "regenerate --check after: exit $?"
git status --short | sed 's/^/   /'
grep -n "X1" README.md | head -3
python -m pytest -q -n 2 -p no:cacheprovider tests/test_derived_docs.py tests/test_committed_records.py tests/test_study_words.py tests/test_paper_checks.py tests/test_readme.py tests/test_front_page.py tests/test_structure.py tests/test_reliability.py -k "not slow" 2>&1 | tail -2
git stash -q -u && echo "   (trial 1 undone)"
fi

if [[ $ONLY == *" method "* ]]; then
echo "== trial 2: a compare method (its file only)"
python -m mixlinreg.cli compare --preset smoke --out $TMP/cmp_before --no-store --no-progress 2>&1 | tail -1
python $T/add_method.py mixlinreg/compare.py
git status --short | sed 's/^/   /'
python -m mixlinreg.cli compare --preset smoke --out $TMP/cmp_after --no-store --no-progress 2>&1 | tail -1
python $T/same_rows.py $TMP/cmp_before $TMP/cmp_after
git checkout -q -- mixlinreg/compare.py && echo "   (trial 2 undone)"
fi

if [[ $ONLY == *" loss "* ]]; then
echo "== trial 3: a loss (its section and entry in losses.py, a line per dispatcher, its test)"
python $T/add_loss.py mixlinreg/losses.py tests/test_losses.py
git status --short | sed 's/^/   /'
python $T/use_loss.py
python -m pytest -q -n 0 -p no:cacheprovider tests/test_losses.py 2>&1 | tail -2
git checkout -q -- mixlinreg/losses.py tests/test_losses.py && echo "   (trial 3 undone)"
fi
cd / && git -C "$MAIN" worktree remove --force "$W" && rm -rf "$TMP"
