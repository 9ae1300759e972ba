# SPDX-License-Identifier: GPL-2.0
"""The command line every subcommand shares: one definition of --arch, --impl, --config and
--debug, one way to refuse bad input, and the refusal of flags that do not go together.

A refusal is one line on stderr, `rkprobes COMMAND: error: ...`, naming the problem and the
valid values, with exit code 2; argparse's own errors (an unknown option, a bad number, a value
outside a fixed list) are reworded into the same form. A step that fails later exits 1.
Everything here runs before setup, the tree or a build is touched, so a refusal costs nothing.
"""

import argparse
import re
import sys

from . import common

USAGE_EXIT = 2


class UsageError(common.Failure):
    """Bad input on the command line: one line, exit code USAGE_EXIT."""


class Parser(argparse.ArgumentParser):
    """argparse with the project's one-line refusal."""

    def error(self, message):
        print(f"{self.prog}: error: {reword(message, self)}", file=sys.stderr, flush=True)
        sys.exit(USAGE_EXIT)


def options_of(parser):
    """The long options `parser` takes, in the order they were added."""
    return [s for a in parser._actions for s in a.option_strings if s.startswith("--") and s != "--help"]


def reword(message, parser):
    """argparse's message in the project's words: the problem, then the valid values."""
    m = re.match(r"argument (\S+?)(?:/\S+)?: invalid choice: '(.*?)' \(choose from (.*)\)$", message)
    if m:
        choices = ", ".join(c.strip().strip("'") for c in m.group(3).split(","))
        if m.group(1) == "COMMAND":
            return f"unknown command {m.group(2)!r}; valid commands: {choices}"
        return f"unsupported {m.group(1)} {m.group(2)}; valid values: {choices}"
    m = re.match(r"argument (\S+?)(?:/\S+)?: invalid int value: '(.*)'$", message)
    if m:
        return f"{m.group(1)} {m.group(2)!r} is not a whole number; give a number of the kind its help names"
    m = re.match(r"argument (\S+?)(?:/\S+)?: expected one argument$", message)
    if m:
        return f"{m.group(1)} needs a value; see {parser.prog} --help for its valid values"
    m = re.match(r"unrecognized arguments: (.*)$", message)
    if m:
        return f"unknown option(s) {m.group(1)}; valid options: {', '.join(options_of(parser)) or 'none'}"
    return message


# The specifications of the shared options, kept in the namespace under these names so that
# resolve() finds what the subcommand allows.
_ARCH, _IMPL, _CONFIG, _DEBUG, _CONFLICTS, _CHECKS = ("_cli_arch", "_cli_impl", "_cli_config", "_cli_debug",
                                                    "_cli_conflicts", "_cli_checks")


def add_arch(p, arches=None, multi=False, default="x86_64", why=""):
    """--arch: one arch of `arches` (default every arch), or with `multi` a comma list or `all`.
    `why` says why the subcommand runs on `arches` only."""
    arches = tuple(arches or common.ARCHES)
    what = "architecture(s), comma-separated, or 'all'" if multi else "architecture"
    p.add_argument("--arch", default=None, metavar="LIST" if multi else "ARCH",
                   help=f"{what} (default {default}); valid: {', '.join(arches)}" + (f" ({why})" if why else ""))
    p.set_defaults(**{_ARCH: (arches, multi, default, why)})


def add_impl(p, multi=False, default_help="c"):
    """--impl: one implementation, or with `multi` a comma list or `all`; None when not given
    (the subcommand's default, described by `default_help`)."""
    what = "implementation(s), comma-separated, or 'all'" if multi else "implementation of kprobes"
    p.add_argument("--impl", default=None, metavar="LIST" if multi else "IMPL",
                   help=f"{what} (default: {default_help}). {common.impls_help()}")
    p.set_defaults(**{_IMPL: multi})


def add_config(p, configs, default, help_extra=""):
    """--config: one of `configs`; `default` when not given (None: the subcommand decides)."""
    p.add_argument("--config", default=None, metavar="CONFIG",
                   help=f"kernel configuration: {', '.join(configs)}"
                   + (f" (default {default})" if default else "") + (f". {help_extra}" if help_extra else ""))
    p.set_defaults(**{_CONFIG: (tuple(configs), default)})


def add_debug(p, multi=False, help_extra=""):
    """--debug: a debug checker of common.DEBUG_CONFIGS built into the kernel, or with `multi` a
    comma list or `all` (one run each)."""
    p.add_argument("--debug", default=None, metavar="LIST" if multi else "CHECKER",
                   help=("debug checker(s), comma-separated or 'all', one run each: " if multi
                         else "debug checker built into the kernel: ")
                   + ", ".join(common.DEBUG_CONFIGS) + (f". {help_extra}" if help_extra else ""))
    p.set_defaults(**{_DEBUG: multi})


def checks(p, func, chain=False):
    """`func(args)`, run by resolve() after the shared options: the subcommand's own checks of its
    options (raising UsageError), so that they too run before anything is set up or built. With
    `chain`, after the checks given before rather than instead of them."""
    before = p.get_default(_CHECKS) or [] if chain else []
    p.set_defaults(**{_CHECKS: before + [func]})


def conflicts(p, *rules):
    """Flags of `p` that do not go together: (flag, flag, why). A flag is `--name` (given at
    all) or `--name=value` (given with that value)."""
    p.set_defaults(**{_CONFLICTS: list(rules)})


def _given(args, flag):
    name, _, value = flag.partition("=")
    got = getattr(args, name[2:].replace("-", "_"), None)
    if got is None or got is False:
        return None
    if value and str(got) != value:
        return None
    return f"{name} {got}" if not isinstance(got, bool) else name


def _names(value, valid, flag, multi, what):
    """The names of a comma list, `all` (multi) or one name; refuses unknown ones."""
    suffix = ", a comma list of them, or all" if multi else ""
    if multi and value.strip() == "all":
        return list(valid)
    items = list(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    if not items:
        raise UsageError(f"{flag} needs a value; valid values: {', '.join(valid)}{suffix}")
    bad = [v for v in items if v not in valid]
    if bad:
        raise UsageError(f"unsupported {flag} {', '.join(bad)}; valid values: {', '.join(valid)}{suffix}")
    if not multi and len(items) > 1:
        raise UsageError(f"{flag} {value}: this command takes one {what}; valid values: {', '.join(valid)}")
    return items


def resolve(args, command):
    """Check the shared options and the conflicts of `command`'s namespace; sets args.arches
    (and args.arch), args.impls (None: the subcommand's default), args.config, args.debugs.
    Raises UsageError on bad input. Conflicts are judged on what was given, before defaults."""
    for a, b, why in getattr(args, _CONFLICTS, []):
        ga, gb = _given(args, a), _given(args, b)
        if ga and gb:
            raise UsageError(f"{ga} and {gb} do not go together: {why}")
    spec = getattr(args, _ARCH, None)
    if spec:
        arches, multi, default, why = spec
        value = args.arch if args.arch is not None else default
        items = [v.strip() for v in value.split(",")]
        outside = [a for a in items if a in common.ARCHES and a not in arches]
        if outside:
            raise UsageError(f"--arch {', '.join(outside)}: `rkprobes {command}` runs on {', '.join(arches)} only"
                             + (f" ({why})" if why else "") + f"; valid values: {', '.join(arches)}")
        known = (list(arches) if multi and value.strip() == "all"
                 else _names(value, arches, "--arch", multi, "architecture"))
        args.arches = known
        args.arch = known[0]
    if hasattr(args, _IMPL):
        multi = getattr(args, _IMPL)
        args.impls = None
        if args.impl is not None:
            args.impls = _names(args.impl, common.IMPLS, "--impl", multi, "implementation")
            for impl in args.impls:
                for arch in getattr(args, "arches", ["x86_64"]):
                    why = common.rust_unavailable_reason(arch, impl)
                    if why:
                        raise UsageError(f"--impl {impl} --arch {arch}: {why}; valid combinations: "
                                         f"{common.valid_combinations()}")
    spec = getattr(args, _CONFIG, None)
    if spec:
        configs, default = spec
        if args.config is not None and args.config not in configs:
            raise UsageError(f"unsupported --config {args.config}; valid values: {', '.join(configs)}")
    if hasattr(args, _DEBUG):
        args.debugs = (None if args.debug is None
                       else _names(args.debug, common.DEBUG_CONFIGS, "--debug", getattr(args, _DEBUG), "checker"))
    if spec and args.config is None:
        args.config = spec[1]
    for func in getattr(args, _CHECKS, None) or []:
        func(args)
