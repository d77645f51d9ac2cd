"""`moot completion bash|zsh`: a shell completion script, generated from the parser itself.

`shtab` turns the argparse parser into the script, so a new subcommand or flag completes with
no change here. Arguments marked with `flags.completes` complete files, folders, or the ids of
the saved debates (read by the shell from `--state-dir` on the line, else `$MOOT_STATE_DIR`,
else ./debates, when you press tab: no `moot` process starts). A folder's name is offered only
when it is an id (letters, digits, `_ . -`): a state dir is not trusted to hold only debates.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from moot.core.errors import ExitCode

from .flags import COMPLETE_ATTR

if TYPE_CHECKING:
    from .flags import Subcommands

SHELLS = ["bash", "zsh"]

_BASH_IDS = r"""
# The saved debates' ids: folders of the state dir that hold an event log.
_moot_debate_ids() {
  local dir="${MOOT_STATE_DIR:-debates}" i f
  for ((i = 1; i < ${#COMP_WORDS[@]}; i++)); do
    if [[ ${COMP_WORDS[i]} == --state-dir ]]; then
      dir="${COMP_WORDS[i+1]}"
      [[ $dir == = ]] && dir="${COMP_WORDS[i+2]}"
    fi
  done
  # Only names that are ids, and no `compgen -W`: it expands its words, so a folder named
  # `$(cmd)` would run cmd at a tab, and a name with escape sequences would reach the terminal.
  for f in "$dir"/*/events.jsonl; do
    [[ -f $f ]] || continue
    f="${f%/events.jsonl}"; f="${f##*/}"
    [[ $f =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*$ && $f == "$1"* ]] && printf '%s\n' "$f"
  done
  return 0
}
"""

_ZSH_IDS = r"""
# The saved debates' ids: folders of the state dir that hold an event log.
_moot_debate_ids() {
  local dir=${MOOT_STATE_DIR:-debates}
  local i=${words[(I)--state-dir]}
  (( i )) && dir=${words[i+1]}
  local -a ids found
  local id
  found=( ${~dir}/*/events.jsonl(N:h:t) )
  for id in $found; do  # only names that are ids (no escape sequences reach the terminal)
    [[ $id =~ '^[A-Za-z0-9][A-Za-z0-9_.-]*$' ]] && ids+=( $id )
  done
  compadd -a ids
}
"""

COMPLETERS: dict[str, dict[str, Any]] = {
    "file": {"bash": "_shtab_compgen_files", "zsh": "_files"},
    "directory": {"bash": "_shtab_compgen_dirs", "zsh": "_files -/"},
    "debate": {"bash": "_moot_debate_ids", "zsh": "_moot_debate_ids",
               "preamble": {"bash": _BASH_IDS, "zsh": _ZSH_IDS}},
}
"""What each `flags.completes` kind becomes, per shell (shtab's own file and folder completers)."""


def register(sub: Subcommands) -> None:
    c = sub.add_parser("completion", help="print a shell completion script (bash, zsh); see the README",
                       description="Print a completion script for your shell. bash: add "
                                   "`eval \"$(moot completion bash)\"` to ~/.bashrc. zsh: "
                                   "`moot completion zsh > ~/.zfunc/_moot` with ~/.zfunc on $fpath before compinit.")
    c.add_argument("shell", choices=SHELLS)
    c.set_defaults(handler=cmd_completion)


def cmd_completion(args: argparse.Namespace) -> int:
    import shtab

    parser: argparse.ArgumentParser = args.root_parser  # set by `moot.cli.build_parser`
    for action in _actions(parser):
        kind = getattr(action, COMPLETE_ATTR, None)
        if kind is not None:
            action.complete = COMPLETERS[kind]  # type: ignore[attr-defined]  # shtab reads this attribute
    script = shtab.complete(parser, shell=args.shell)
    sys.stdout.write(script if script.endswith("\n") else script + "\n")
    return ExitCode.OK


def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Every argument of `parser` and of its subcommands' parsers, at any depth."""
    found: list[argparse.Action] = []
    for action in parser._actions:
        found.append(action)
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases share a parser
                found += _actions(sub)
    return found
