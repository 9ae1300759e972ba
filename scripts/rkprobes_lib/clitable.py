# SPDX-License-Identifier: GPL-2.0
"""`rkprobes check-cli`: run the bad invocations of every subcommand and check each refusal.

Each invocation below runs `scripts/rkprobes` for real, with RKPROBES_CLI_DRY_RUN set so that
an invocation the command line accepts stops right after its options are checked (it prints
`accepted` and exits 0) instead of setting up or building anything. A refusal must be exit
code 2, nothing on stdout and one line on stderr, `rkprobes COMMAND: error: ...`, holding the
words the table expects (the valid values, or why two flags do not go together); an accepted
invocation must be exit 0. The table of docs/cli.md is this run's output: `check-cli` fails
when it differs, `check-cli --write` rewrites it; so do the usage lines of every subcommand,
taken from its --help.
"""

import os
import subprocess
import sys

from . import common

SCRIPT = common.REPO / "scripts" / "rkprobes"
DOC = common.REPO / "docs" / "cli.md"
DRY_RUN_ENV = "RKPROBES_CLI_DRY_RUN"
TABLE_BEGIN, TABLE_END = "<!-- check-cli table: begin -->", "<!-- check-cli table: end -->"
USAGE_BEGIN, USAGE_END = "<!-- check-cli usage: begin -->", "<!-- check-cli usage: end -->"
COMMANDS = ("setup", "build", "run", "test", "bench", "profile", "stress", "check-layout", "export", "check-cli")

# (arguments, exit code expected, words the message must hold).
CASES = [
    ("setup --check --yes", 2, "do not go together"),
    ("setup --bogus", 2, "valid options: --check, --yes"),
    ("build --arch sparc", 2, "valid values: x86_64, arm64, riscv, loongarch, ppc64, s390"),
    ("bench --impl rust-arch --arch arm64", 2, "valid values: x86_64"),
    ("build --impl c,rust", 2, "takes one implementation"),
    ("build --config huge", 2, "valid values: kunit, run, bench"),
    ("build --debug kasan --config run", 2, "valid values of --config with --debug: kunit, preempt"),
    ("build --debug heisenbug", 2, "valid values: lockdep, kasan, kmemleak, ubsan, list, faults"),
    ("build --linux-src /nonexistent", 2, "valid: a git tree of Linux 6.12.y"),
    ("run --arch mips", 2, "valid values: x86_64, arm64"),
    ("run --impl go", 2, "valid values: c, rust, rust-arch"),
    ("run --timeout soon", 2, "not a whole number"),
    ("test --arch arm64,mips", 2, "unsupported --arch mips"),
    ("test --impl cobol", 2, "a comma list of them, or all"),
    ("test --host-only --decoder", 2, "do not go together"),
    ("test --host-only --arch arm64", 2, "do not go together"),
    ("test --host-only --no-stress", 2, "do not go together"),
    ("test --kselftest --no-ftrace", 2, "do not go together"),
    ("test --shard 4/3", 2, "1 <= K <= N"),
    ("test --host-only --shard 1/2", 2, "do not go together"),
    ("bench --arch arm64", 2, "valid values: x86_64"),
    ("bench --bulk-big --no-bulk", 2, "do not go together"),
    ("bench --reps 99", 2, "valid values are 1..16"),
    ("profile --arch riscv", 2, "valid values: x86_64"),
    ("profile --warmup --bench-sequence", 2, "do not go together"),
    ("profile --scope everything", 2, "valid values: core, kernel"),
    ("stress --arch riscv", 2, "valid values: x86_64, arm64, ppc64, s390, loongarch"),
    ("stress --arch loongarch", 2, "only --scenario ftrace-aggr runs there"),
    ("stress --debug kasan --config bench", 2, "do not go together"),
    ("stress --race --debug kasan", 2, "do not go together"),
    ("stress --race --arch arm64", 2, "do not go together"),
    ("stress --debug heisenbug", 2, "a comma list of them, or all"),
    ("stress --tcg triple", 2, "valid values: multi, single"),
    ("stress --scenario ftrace-aggr --config preempt", 2, "do not go together"),
    ("stress --scenario kretprobe-grow --arch ppc64", 2, "the scenario runs on x86_64, arm64 only"),
    ("stress --duration 0", 2, "at least 1 second"),
    ("check-layout --edge-list", 2, "valid options: --edges"),
    ("export --base v6.6", 2, "valid values: v6.12, v6.12.N"),
    ("check-cli --frobnicate", 2, "valid options: --write"),
    ("frobnicate", 2, "valid commands: setup, build"),
    # Accepted: the refusals above are not so broad that they refuse these.
    ("test --host-only", 0, "accepted"),
    ("test --arch all --impl c,rust", 0, "accepted"),
    ("test --arch arm64 --shard 2/3", 0, "accepted"),
    ("export --base v6.12 -o /tmp/series", 0, "accepted"),
    ("build --arch arm64 --impl rust --debug lockdep", 0, "accepted"),
    ("stress --debug kasan --config kunit", 0, "accepted"),
    ("stress --race", 0, "accepted"),
]


def add_args(p):
    p.add_argument("--write", action="store_true", help=f"rewrite the generated parts of {DOC.name} from this run")


def _run(args):
    env = dict(os.environ, **{DRY_RUN_ENV: "1"}, COLUMNS="100")
    r = subprocess.run([sys.executable, str(SCRIPT)] + args.split(), capture_output=True, text=True, env=env,
                       timeout=60, stdin=subprocess.DEVNULL)
    return r.returncode, r.stdout, r.stderr


def check_case(args, want_rc, words):
    """Run one invocation; returns (the line it printed, problems)."""
    rc, out, err = _run(args)
    problems = []
    if rc != want_rc:
        problems.append(f"exit {rc}, expected {want_rc}")
    if want_rc == 0:
        line = out.strip()
        if err.strip():
            problems.append(f"stderr not empty: {err.strip()[:200]}")
    else:
        line = err.strip()
        if out.strip():
            problems.append(f"stdout not empty: {out.strip()[:200]}")
        if len(err.strip().splitlines()) != 1:
            problems.append(f"{len(err.strip().splitlines())} lines on stderr, expected 1")
        command = args.split()[0] if args.split()[0] in COMMANDS else None
        prefix = f"rkprobes {command}: error: " if command else "rkprobes: error: "
        if not line.startswith(prefix):
            problems.append(f"does not start with {prefix!r}")
    if words not in line:
        problems.append(f"does not say {words!r}")
    return line, problems


def usage_lines():
    """`scripts/rkprobes COMMAND --help`'s usage paragraph, per command."""
    text = []
    for c in COMMANDS:
        _, out, _ = _run(f"{c} --help")
        text.append(out.split("\n\n")[0].strip())
    return "\n".join(text)


def _md(text):
    return text.replace("|", "\\|")


def generate():
    """(the table, the usage block, problems)."""
    rows = ["| invocation | exit | what it prints |", "|---|---|---|"]
    problems = []
    for args, want_rc, words in CASES:
        line, p = check_case(args, want_rc, words)
        problems += [f"`rkprobes {args}`: {x}" for x in p]
        rows.append(f"| `rkprobes {args}` | {want_rc} | {_md(line)} |")
    usage = "```\n" + usage_lines() + "\n```"
    return "\n".join(rows), usage, problems


def _splice(doc, begin, end, body):
    a, b = doc.index(begin) + len(begin), doc.index(end)
    return doc[:a] + "\n" + body + "\n" + doc[b:]


def check(write=False):
    """(problems, summary): the refusals, and docs/cli.md against them."""
    table, usage, problems = generate()
    doc = DOC.read_text() if DOC.is_file() else ""
    if not all(m in doc for m in (TABLE_BEGIN, TABLE_END, USAGE_BEGIN, USAGE_END)):
        return problems + [f"{DOC.relative_to(common.REPO)} lacks the check-cli markers"], ""
    new = _splice(_splice(doc, TABLE_BEGIN, TABLE_END, table), USAGE_BEGIN, USAGE_END, usage)
    if new != doc:
        if write:
            DOC.write_text(new)
        else:
            problems.append(f"{DOC.relative_to(common.REPO)} differs from this run's table or usage lines; "
                            "scripts/rkprobes check-cli --write rewrites them")
    refused = sum(1 for c in CASES if c[1] == 2)
    return problems, (f"{refused} bad invocations refused with one line and exit 2, "
                      f"{len(CASES) - refused} good ones accepted, on {len(COMMANDS)} commands; "
                      f"{DOC.relative_to(common.REPO)} matches")


def cmd_check_cli(args):
    problems, summary = check(args.write)
    for p in problems:
        print(f"  FAIL  {p}")
    if problems:
        raise common.Failure(f"check-cli: {len(problems)} problem(s)")
    common.info(f"check-cli: {summary}")
    return 0


def test_row(res):
    problems, summary = check()
    bad = len({p.split("`:")[0] for p in problems if p.startswith("`")})
    res.add("host: one CLI: bad invocations refused, docs/cli.md (scripts/rkprobes check-cli)",
            len(CASES) - bad, bad + int(any(not p.startswith("`") for p in problems)),
            note="\n".join(problems) if problems else summary)
