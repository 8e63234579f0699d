"""Rewrites of a destructive delete or a push, tried against the shipped rule sets.

Each row is a Bash line and what the policy must make of it with
`deny = [{ preset = "destructive-delete" }, { preset = "push" }]`, headless:

- `DENIED`: a deny rule matches what the line runs;
- `ASKED`: a part only known at run time could match a deny rule (asked in the TUI, denied
  headless);
- `UNCATCHABLE`: no pattern rule can see the effect (an interpreter, a script, a renamed copy,
  a program's own action): the policy lets it through, and the row says so, so that this table
  stays honest. The sandbox and `comal rewind` are the protection for those.

`GAP` marks the rows the issue found open (the parser read the launcher's options wrongly).
"""

from __future__ import annotations

from typing import Final

DENIED: Final = "denied"
ASKED: Final = "asked"
UNCATCHABLE: Final = "uncatchable"
GAP: Final = "gap"

ROWS: tuple[tuple[str, str, str], ...] = (
    # --- rm, spelled every way ---------------------------------------------------------------
    ("rm -rf build", DENIED, ""),
    ("rm -fr build", DENIED, ""),
    ("rm -r -f build", DENIED, ""),
    ("rm -R build", DENIED, ""),
    ("rm build -rf", DENIED, ""),
    ("rm -vrf build", DENIED, ""),
    ("rm --recursive --force build", DENIED, ""),
    ("rm --rec --for build", DENIED, GAP),
    ("rm --re build", DENIED, GAP),
    ("rm -r build", DENIED, "rm -r without -f"),
    ("rm -d emptydir", DENIED, ""),
    ("/bin/rm -rf build", DENIED, ""),
    ("\\rm -rf build", DENIED, ""),
    ('"rm" -rf build', DENIED, ""),
    ("r''m -rf build", DENIED, ""),
    # --- inside lists, groups and substitutions ----------------------------------------------
    ("true && rm -rf build", DENIED, ""),
    ("ls; rm -rf build", DENIED, ""),
    ("echo ok | rm -rf build", DENIED, ""),
    ("(rm -rf build)", DENIED, ""),
    ("{ rm -rf build; }", DENIED, ""),
    ("echo $(rm -rf build)", DENIED, ""),
    ("echo `rm -rf build`", DENIED, ""),
    ("cat <(rm -rf build)", DENIED, ""),
    ("if true; then rm -rf build; fi", DENIED, ""),
    ('for d in a b; do rm -rf "$d"; done', DENIED, ""),
    ("f() { rm -rf build; }; f", DENIED, ""),
    ("bash -c 'rm -rf build'", DENIED, ""),
    ('sh -c "rm -rf build"', DENIED, ""),
    ("bash -lc 'rm -rf build'", DENIED, ""),
    ("eval 'rm -rf build'", DENIED, ""),
    ("bash -c \"bash -c 'rm -rf build'\"", DENIED, ""),
    ("trap 'rm -rf build' EXIT", DENIED, ""),
    # --- launchers ---------------------------------------------------------------------------
    ("env rm -rf build", DENIED, ""),
    ("env -i FOO=1 rm -rf build", DENIED, ""),
    ("env -u HOME rm -rf build", DENIED, ""),
    ("env --uns HOME rm -rf build", DENIED, GAP),
    ("command -p rm -rf build", DENIED, ""),
    ("exec -a x rm -rf build", DENIED, ""),
    ("sudo rm -rf build", DENIED, ""),
    ("sudo --pre rm -rf build", DENIED, "an ambiguous abbreviation of two flags"),
    ("sudo --user=root rm -r build", DENIED, ""),
    ("doas rm -rf build", DENIED, ""),
    ("nice -n 5 rm -rf build", DENIED, ""),
    ("nice --adjustment=5 rm -rf build", DENIED, ""),
    ("nice --adj 5 rm -rf build", DENIED, GAP),
    ("ionice -c 3 rm -rf build", DENIED, ""),
    ("ionice -t rm -rf build", DENIED, GAP),
    ("timeout 5 rm -rf build", DENIED, ""),
    ("timeout -s KILL 5 rm -rf build", DENIED, ""),
    ("timeout -vs KILL 5 rm -rf build", DENIED, ""),
    ("timeout --sig KILL 5 rm -rf build", DENIED, GAP),
    ("timeout --ver 5 rm -rf build", DENIED, "an ambiguous abbreviation of two flags"),
    ("stdbuf -oL rm -rf build", DENIED, ""),
    ("stdbuf --out L rm -rf build", DENIED, GAP),
    ("nohup rm -rf build", DENIED, ""),
    ("setsid rm -rf build", DENIED, ""),
    ("time rm -rf build", DENIED, ""),
    ("flock /tmp/lock rm -rf build", DENIED, ""),
    ("flock /tmp/lock -c 'rm -rf build'", DENIED, GAP),
    ("prlimit --nofile=100 rm -rf build", DENIED, GAP),
    ("setpriv --no-new-privs rm -rf build", DENIED, GAP),
    ("strace -f -o /dev/null rm -rf build", DENIED, GAP),
    ("ltrace -o /dev/null rm -rf build", DENIED, ""),
    ("chroot / rm -rf build", DENIED, ""),
    ("unshare -r rm -rf build", DENIED, ""),
    ("fakeroot rm -rf build", DENIED, ""),
    ("busybox rm -rf build", DENIED, ""),
    # --- xargs and find ----------------------------------------------------------------------
    ("xargs rm -rf < list", DENIED, ""),
    ("echo build | xargs -I {} rm -rf {}", DENIED, ""),
    ("echo build | xargs -i rm -rf {}", DENIED, GAP),
    ("echo build | xargs -l rm -rf", DENIED, GAP),
    ("echo build | xargs -e rm -rf", DENIED, GAP),
    ("find . -name build -exec rm -rf {} +", DENIED, ""),
    ("find . -exec sh -c 'rm -rf \"$1\"' _ {} \\;", DENIED, ""),
    ("find . -name '*.o' -delete", DENIED, "find -delete"),
    ("find build -depth -delete", DENIED, "find -delete"),
    # --- other programs that delete ----------------------------------------------------------
    ("unlink build/file", DENIED, "unlink"),
    ("rmdir build", DENIED, ""),
    ("shred -u secret", DENIED, ""),
    ("git clean -fdx", DENIED, ""),
    ("git clean --force", DENIED, ""),
    # --- push --------------------------------------------------------------------------------
    ("git push origin main", DENIED, ""),
    ("git push --force", DENIED, ""),
    ("git -C repo push", DENIED, ""),
    ("git --git-dir=.git push", DENIED, ""),
    ("git --work-tree . push", DENIED, ""),
    ("git -c core.pager=cat push", DENIED, ""),
    ("git --config-env x=y push", DENIED, GAP),
    ("git send-pack ../remote main", DENIED, "git send-pack"),
    ("git subtree push --prefix lib origin main", DENIED, ""),
    ("sudo -u me git push", DENIED, ""),
    # --- only known at run time --------------------------------------------------------------
    ("$CMD -rf build", ASKED, ""),
    ("$(echo rm) -rf build", ASKED, ""),
    ('sh -c "$X"', ASKED, ""),
    ('eval "$X"', ASKED, ""),
    ("bash cleanup.sh", ASKED, ""),
    ("bash < cleanup.sh", ASKED, ""),
    ("source ./cleanup.sh", ASKED, ""),
    (". ./cleanup.sh", ASKED, ""),
    ("alias r='rm -rf'; r build", ASKED, ""),
    ("r* -rf build", ASKED, ""),
    ("su -c 'rm -rf build'", ASKED, ""),
    ("watch rm -rf build", ASKED, ""),
    ("env -S 'rm -rf build'", ASKED, ""),
    ("sudo -s", ASKED, ""),
    ("echo build | xargs $OPTS rm", ASKED, ""),
    ("git $SUB origin main", ASKED, ""),
    ("sudo --p x rm -rf build", ASKED, "an abbreviation of a flag or an option with a value"),
    # --- what no pattern rule can see --------------------------------------------------------
    ("python3 -c 'import shutil; shutil.rmtree(\"build\")'", UNCATCHABLE, "interpreter"),
    ("perl -e 'use File::Path; rmtree(\"build\")'", UNCATCHABLE, "interpreter"),
    ("node -e \"require('fs').rmSync('build', {recursive: true})\"", UNCATCHABLE, "interpreter"),
    ("ruby -rfileutils -e 'FileUtils.rm_rf(\"build\")'", UNCATCHABLE, "interpreter"),
    ("awk 'BEGIN { system(\"rm -rf build\") }'", UNCATCHABLE, "awk runs a shell"),
    ("sed -n '1e rm -rf build' notes.txt", UNCATCHABLE, "sed e runs a shell"),
    ("cp /bin/rm ./del && ./del -rf build", UNCATCHABLE, "a renamed copy"),
    ("./cleanup.sh", UNCATCHABLE, "a script"),
    ("python3 cleanup.py", UNCATCHABLE, "a script"),
    ("BASH_ENV=./evil.sh bash -c true", UNCATCHABLE, "BASH_ENV runs a file first"),
    ("make clean", UNCATCHABLE, "a Makefile recipe"),
    ("npm run clean", UNCATCHABLE, "a package script"),
    ("tar -cf /dev/null x --checkpoint=1 --checkpoint-action=exec='rm -rf build'",
     UNCATCHABLE, "tar actions"),
    ("tar -xf a.tar --to-command='rm -rf build'", UNCATCHABLE, "tar actions"),
    ("git -c alias.p=push p origin main", UNCATCHABLE, "a git alias"),
    ("git p origin main", UNCATCHABLE, "an alias from .git/config"),
    ("mv build /tmp/gone", UNCATCHABLE, "mv away"),
    ("rsync -a --delete empty/ build/", UNCATCHABLE, "a program's own deletes"),
    ("vim -es -c '!rm -rf build' -c q", UNCATCHABLE, "an editor's shell escape"),
)  # fmt: skip
"""(line, expected verdict, note)."""
