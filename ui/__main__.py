"""`python -m ui [STREAMLIT FLAGS]`: the one command that starts the page (`make run` uses it).

Streamlit reads its settings from the working folder's, the user's and the script's
config.toml, and a careless `~/.streamlit/config.toml` (`address = "0.0.0.0"`,
`gatherUsageStats = true`) applied when the script's own file was skipped (`streamlit run`
through a symlink): the socket was open on every interface until the first visitor, whose
browser then fetched Streamlit's metrics file. Flags outrank every file, so this passes the
address, no usage statistics and headless mode itself; flags given after them win (to expose
the app on purpose: `python -m ui --server.address 0.0.0.0`).
"""

from __future__ import annotations

import sys
from pathlib import Path

APP = Path(__file__).resolve().parent / "app.py"
SAFE_FLAGS = [
    "--server.address",
    "127.0.0.1",
    "--browser.gatherUsageStats",
    "false",
    "--server.headless",
    "true",
]


def command(flags: list[str]) -> list[str]:
    """`streamlit run` of the real ui/app.py with the safe flags first, then `flags`."""
    return ["streamlit", "run", str(APP), *SAFE_FLAGS, *flags]


def main() -> None:
    from streamlit.web import cli

    sys.argv = command(sys.argv[1:])
    sys.exit(cli.main())


if __name__ == "__main__":
    main()
