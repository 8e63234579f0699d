"""Programs that run their arguments as a command, and how their own options are read.

A launcher (`env`, `sudo`, `timeout`, `xargs`, `strace`…) is skipped to find the program it
runs. Its options are read as GNU `getopt_long` reads them, because that is what the program
does: short options cluster (`-vs KILL` is `-v -s KILL`) and a short option's value may be
attached (`-sKILL`); a long option may be abbreviated to any unambiguous prefix (`--sig KILL`
is `--signal KILL`) and its value may follow `=`. An option whose value is optional
(`xargs -i`, `prlimit --nofile`) only takes it attached, so the next word is never its value.

What the launcher runs is then found by `scan()`: the index of the first word of the command,
a literal command line given to an option (`flock FILE -c '…'`), or the reason the command
cannot be named (an option that starts a shell, an ambiguous option, a value only known at
run time).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Launcher:
    """One launcher's options; each set holds short (`-u`) and long (`--unset`) spellings."""

    values: frozenset[str] = frozenset()
    """Options whose value is required: attached, after `=`, or the next word."""
    flags: frozenset[str] = frozenset()
    """Long options without a value (or with an optional one, attached only); only needed so
    that an abbreviation is resolved like getopt does."""
    shells: frozenset[str] = frozenset()
    """Options that make the launcher start a shell of its own (`sudo -s`, `env -S`)."""
    strings: frozenset[str] = frozenset()
    """Options whose value is a command line run by a shell (`flock -c`)."""
    optional: frozenset[str] = frozenset()
    """Short options whose value is optional: the rest of the cluster is it (`xargs -i{}`)."""
    positional: int = 0
    """Fixed operands before the command (a duration, a lock file, a new root)."""

    def long_names(self) -> frozenset[str]:
        every = self.values | self.flags | self.shells | self.strings
        return frozenset(n for n in every if n.startswith("--"))


def _opts(text: str) -> frozenset[str]:
    return frozenset(text.split())


LAUNCHERS: dict[str, Launcher] = {
    "env": Launcher(
        values=_opts("-u --unset -C --chdir"),
        flags=_opts("--ignore-environment --null --debug --block-signal --default-signal "
                    "--ignore-signal --list-signal-handling --help --version"),
        shells=_opts("-S --split-string"),
    ),
    "command": Launcher(),
    "builtin": Launcher(),
    "exec": Launcher(values=_opts("-a")),
    "sudo": Launcher(
        values=_opts("-u -g -h -p -C -D -R -T -U -r -t --user --group --host --prompt "
                     "--close-from --chdir --chroot --command-timeout --other-user --role --type"),
        flags=_opts("--askpass --background --bell --preserve-env --preserve-groups --set-home "
                    "--non-interactive --stdin --remove-timestamp --reset-timestamp --list "
                    "--validate --help --version"),
        shells=_opts("-s -i -e --shell --login --edit"),
    ),
    "doas": Launcher(values=_opts("-u -C"), shells=_opts("-s")),
    "nice": Launcher(values=_opts("-n --adjustment"), flags=_opts("--help --version")),
    "ionice": Launcher(
        values=_opts("-c -n -p -P -u --class --classdata --pid --pgid --uid"),
        flags=_opts("--ignore --help --version"),
    ),
    "nohup": Launcher(),
    "time": Launcher(
        values=_opts("-f -o --format --output"),
        flags=_opts("--append --portability --verbose --quiet --help --version"),
    ),
    "timeout": Launcher(
        values=_opts("-s -k --signal --kill-after"),
        flags=_opts("--foreground --preserve-status --verbose --help --version"),
        positional=1,
    ),
    "stdbuf": Launcher(
        values=_opts("-i -o -e --input --output --error"), flags=_opts("--help --version")
    ),
    "setsid": Launcher(flags=_opts("--ctty --fork --wait --help --version")),
    "chrt": Launcher(
        values=_opts("-T -P -D --sched-runtime --sched-period --sched-deadline"),
        flags=_opts("--all-tasks --batch --deadline --fifo --idle --other --rr "
                    "--reset-on-fork --max --pid --verbose --help --version"),
        positional=1,
    ),
    "taskset": Launcher(flags=_opts("--all-tasks --cpu-list --pid --help --version"), positional=1),
    "unbuffer": Launcher(),
    "flock": Launcher(
        values=_opts("-w -E --timeout --wait --conflict-exit-code"),
        flags=_opts("--shared --exclusive --unlock --nonblock --nb --close --no-fork --verbose "
                    "--help --version"),
        strings=_opts("-c --command"),
        positional=1,
    ),
    "busybox": Launcher(),
    "coproc": Launcher(),
    "prlimit": Launcher(
        optional=_opts("-c -d -e -f -i -l -m -n -q -r -s -t -u -v -x -y"),
        values=_opts("-p -o --pid --output"),
        flags=_opts("--noheadings --raw --verbose --help --version --as --core --cpu --data "
                    "--fsize --locks --memlock --msgqueue --nice --nofile --nproc --rss "
                    "--rtprio --rttime --sigpending --stack"),
    ),
    "setpriv": Launcher(
        values=_opts("--ruid --euid --rgid --egid --reuid --regid --groups --inh-caps "
                     "--ambient-caps --bounding-set --securebits --pdeathsig --selinux-label "
                     "--apparmor-profile --landlock-access --landlock-rule --seccomp-filter"),
        flags=_opts("--dump --nnp --no-new-privs --clear-groups --keep-groups --init-groups "
                    "--reset-env --help --version"),
    ),
    "strace": Launcher(
        values=_opts("-a -b -e -E -I -o -O -p -P -S -s -u -U -X --attach --columns --detach-on "
                     "--env --interruptible --output --signal --status --string-limit "
                     "--summary-sort-by --summary-columns --trace --trace-path --user "
                     "--const-print-style --abbrev --verbose --raw --read --write --quiet "
                     "--decode-fds --decode-pids --silence --fault --inject"),
        flags=_opts("--follow-forks --output-separately --summary-only --summary "
                    "--summary-wall-clock --seccomp-bpf --syscall-times --timestamps "
                    "--relative-timestamps --instruction-pointer --stack-trace --no-abbrev "
                    "--successful-only --failed-only --daemonize --help --version"),
    ),
    "ltrace": Launcher(
        values=_opts("-a -A -D -e -F -l -n -o -p -s -u -w -x --align --indent --library "
                     "--output"),
        flags=_opts("--demangle --help --version"),
    ),
    "chroot": Launcher(
        values=_opts("--userspec --groups"), flags=_opts("--skip-chdir --help --version"),
        positional=1,
    ),
    "unshare": Launcher(
        values=_opts("-R -w -S -G --root --wd --setuid --setgid --setgroups --map-user "
                     "--map-group --map-users --map-groups --propagation"),
        flags=_opts("--mount --uts --ipc --net --pid --user --cgroup --time --fork "
                    "--map-root-user --map-current-user --map-auto --mount-proc --kill-child "
                    "--keep-caps --monotonic --boottime --help --version"),
    ),
    "fakeroot": Launcher(
        values=_opts("-l -s -i --lib --faked"), flags=_opts("--unknown-is-real --help --version")
    ),
}  # fmt: skip
"""Launchers whose arguments are a command."""

XARGS = Launcher(
    optional=_opts("-e -i -l"),
    values=_opts("-a -d -E -I -L -n -P -s --arg-file --delimiter --max-args --max-procs "
                 "--max-chars --process-slot-var"),
    flags=_opts("--null --no-run-if-empty --interactive --verbose --exit --open-tty "
                "--show-limits --max-lines --replace --eof --help --version"),
)  # fmt: skip
"""xargs: `-e`, `-i` and `-l` (and `--eof`, `--replace`, `--max-lines`) take their value only
attached, so `xargs -i rm {}` runs rm."""


@dataclass(frozen=True, slots=True)
class Scan:
    """Where the launched command starts, or why it cannot be named."""

    start: int
    """Index of the command's first word (len(args) when there is none)."""
    script: str | None = None
    """A literal command line an option runs through a shell (`flock -c '…'`)."""
    reason: str = ""
    """Non-empty when the command cannot be named statically."""


def resolve_long(spec: Launcher, name: str) -> str | None:
    """A long option's full name as getopt resolves it: exact, else the only prefix match.

    None when no option or more than one has this prefix (getopt then refuses the line).
    """
    names = spec.long_names()
    if name in names:
        return name
    found = [n for n in names if n.startswith(name)]
    return found[0] if len(found) == 1 else None


def scan(program: str, spec: Launcher, args: list[str | None]) -> Scan:
    """Skip the launcher's options (and fixed operands) in `args`; see the module docstring."""
    i = 0
    positional = spec.positional
    while i < len(args):
        arg = args[i]
        if arg is None:
            return Scan(i, reason=f"an argument of {program} is only known at run time")
        if arg == "--":
            i += 1
            break
        if program == "env" and "=" in arg and not arg.startswith("-"):
            i += 1
            continue
        if arg.startswith("--"):
            name, eq, _ = arg.partition("=")
            full = resolve_long(spec, name)
            if full is None:
                # Unknown, or ambiguous (the program then refuses the line): read as a flag,
                # unless one of the options it could be takes a value or a command.
                candidates = {n for n in spec.long_names() if n.startswith(name)}
                if candidates - spec.flags:
                    return Scan(i, reason=f"{program} {name} is an ambiguous option")
                i += 1
                continue
            value = arg[len(name) + 1 :] if eq else None
            found = _option(program, spec, full, args, i, attached=value)
            if isinstance(found, Scan):
                return found
            i = found
            continue
        if arg.startswith("-") and arg != "-":
            found = _cluster(program, spec, args, i)
            if isinstance(found, Scan):
                return found
            i = found
            continue
        if positional > 0:
            positional -= 1
            i += 1
            continue
        break
    return Scan(i)


def _option(
    program: str,
    spec: Launcher,
    name: str,
    args: list[str | None],
    i: int,
    *,
    attached: str | None,
) -> int | Scan:
    """The index after option `name` at `args[i]` (its value included), or a final Scan."""
    if name in spec.shells:
        return Scan(len(args), reason=f"{program} {name} runs a shell or a command string")
    if name in spec.strings:
        value = attached if attached is not None else (args[i + 1] if i + 1 < len(args) else None)
        if value is None:
            return Scan(len(args), reason=f"{program} {name} runs a string only known at run time")
        return Scan(len(args), script=value)
    if name in spec.values and attached is None:
        return i + 2
    return i + 1


def _cluster(program: str, spec: Launcher, args: list[str | None], i: int) -> int | Scan:
    """Short options clustered in `args[i]` (`-vs`, `-sKILL`)."""
    word = args[i] or ""
    for k in range(1, len(word)):
        name = f"-{word[k]}"
        rest = word[k + 1 :]
        if name in spec.shells or name in spec.strings or name in spec.values:
            return _option(program, spec, name, args, i, attached=rest or None)
        if name in spec.optional:
            break
    return i + 1
