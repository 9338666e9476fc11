"""Regenerate the shell completion scripts from the typer app.

    python completions/generate.py          write completions/rmqtool.bash, _rmqtool, rmqtool.fish
    python completions/generate.py --check  exit 1 when a committed script is out of date
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = {"bash": "rmqtool.bash", "zsh": "_rmqtool", "fish": "rmqtool.fish"}


def render(shell: str) -> str:
    """The completion script typer produces for `shell`."""
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    out = subprocess.run([sys.executable, "-m", "rmqtool", "--show-completion", shell], capture_output=True,
                         text=True, check=True, env=env)
    return out.stdout


def main(check: bool) -> int:
    stale = []
    for shell, name in SCRIPTS.items():
        text = render(shell)
        path = HERE / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(f"out of date: {', '.join(stale)}; run python completions/generate.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv[1:]))
